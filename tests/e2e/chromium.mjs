// What the browser scripts share: their options, their one JSON line out, their deadline,
// and Debian's Chromium started headless the same way (no browser is downloaded).

import { readFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

// The script's string options, each required: exits 2 naming the first one missing.
export function requiredOptions(script, names) {
  const options = Object.fromEntries(names.map((n) => [n, { type: "string" }]));
  const { values } = parseArgs({ options });
  for (const name of names) {
    if (!values[name]) {
      process.stderr.write(`${script}: --${name} is required\n`);
      process.exit(2);
    }
  }
  return values;
}

// Writes one JSON line synchronously: a pipe write is asynchronous in Node, and an exit
// right after one can cut a long line.
export function emit(record) {
  writeSync(1, `${JSON.stringify(record)}\n`);
}

// Ends the script with an error line once `ms` have passed.
export function deadline(ms) {
  const timer = setTimeout(() => {
    emit({ error: `timed out after ${ms / 1000} s` });
    process.exit(1);
  }, ms);
  timer.unref();
}

// Debian's Chromium (or $CHROMIUM), headless, that may play media without a gesture.
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--autoplay-policy=no-user-gesture-required",
    ],
  });
}

// Runs a script's work in Chromium: `work(browser)` returns the record to emit, and the
// process exits 0; a failure emits {"error", ...extra()} and exits 1. The browser is closed
// either way.
export async function withChromium(work, extra = () => ({})) {
  let browser;
  try {
    browser = await launch();
    const record = await work(browser);
    emit(record);
    await browser.close();
    process.exit(0);
  } catch (e) {
    emit({ error: String(e?.stack ?? e), ...extra() });
    await browser?.close().catch(() => {});
    process.exit(1);
  }
}

// axe-core (from this directory's lockfile), run in the page by the test driver: page.evaluate
// is not subject to the page's CSP, which lets no inline script run.
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

// The WCAG 2.0 and 2.1 level A and AA rules.
const WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

// axe-core's WCAG 2.1 A/AA audit of what `page` shows now: one record per violation, named
// `name`, with its rule, impact and the elements it found.
export async function audit(page, name) {
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) {
    await page.evaluate(AXE);
  }
  const result = await page.evaluate(
    (tags) => window.axe.run(document, { runOnly: { type: "tag", values: tags } }),
    WCAG,
  );
  return result.violations.map((v) => ({
    page: name,
    rule: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.slice(0, 12).map((n) => n.target.join(" ")),
  }));
}

// Plays the page's <video> muted (as a browser allows without a gesture) until a second has
// played, it fails, or 30 s pass; returns what it shows then.
export function playASecond(page) {
  return page.evaluate(async () => {
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
}

// Collects the console errors of `page` into `errors` (`page.error: …` for uncaught ones),
// but the browser's own favicon request (medialib serves none) and those `ignored` says to
// pass over (asked as each comes).
export function collectErrors(page, errors, ignored = () => false) {
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.location().url.endsWith("/favicon.ico") && !ignored()) {
      errors.push(`${m.text()} (${m.location().url})`);
    }
  });
}
