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

import { deadline, emit, launch, playASecond, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("player_plays.mjs", ["page"]);
deadline(60_000);

let browser;
try {
  browser = await launch();
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(45_000);
  await page.goto(opts.page);
  const played = await playASecond(page);
  emit(played);
  await browser.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e) });
  await browser?.close().catch(() => {});
  process.exit(1);
}
