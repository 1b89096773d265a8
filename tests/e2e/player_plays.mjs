// A real browser plays a processed video on its player page: Debian's Chromium (headless,
// driven by playwright-core) opens the page, starts the page's own <video> (muted, as a
// browser allows without a gesture) and waits until it has played a second of the video's
// pictures. Run by tests/integration/uploads/clients.rs.
//
//   node player_plays.mjs --page URL
//
// Prints one JSON line: {"currentSrc", "currentTime", "videoWidth", "videoHeight",
// "readyState", "mediaError"} (the media element's error code, or null). Exits 1 on an error
// (after a line {"error": ...}: no <video>, play() refused), 2 on missing arguments.

import { writeSync } from "node:fs";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const { values: opts } = parseArgs({ options: { page: { type: "string" } } });
if (!opts.page) {
  process.stderr.write("player_plays.mjs: --page is required\n");
  process.exit(2);
}

function emit(record) {
  writeSync(1, `${JSON.stringify(record)}\n`);
}

const timer = setTimeout(() => {
  emit({ error: "timed out after 60 s" });
  process.exit(1);
}, 60_000);
timer.unref();

let browser;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--autoplay-policy=no-user-gesture-required",
    ],
  });
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(45_000);
  await page.goto(opts.page);
  const played = await page.evaluate(async () => {
    const video = document.querySelector("video");
    if (!video) throw new Error("the page has no <video>");
    video.muted = true;
    await video.play();
    const started = performance.now();
    while (video.currentTime < 1 && !video.error && performance.now() - started < 30_000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    return {
      currentSrc: video.currentSrc,
      currentTime: video.currentTime,
      videoWidth: video.videoWidth,
      videoHeight: video.videoHeight,
      readyState: video.readyState,
      mediaError: video.error?.code ?? null,
    };
  });
  emit(played);
  await browser.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e) });
  await browser?.close().catch(() => {});
  process.exit(1);
}
