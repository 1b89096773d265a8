// A real browser plays a processed video on its player page: Debian's Chromium (headless,
// driven by playwright-core) opens the page, starts the page's own <video> (muted, as a
// browser allows without a gesture) and waits until it has played a second of the video's
// pictures. Then it hovers the player's seek bar at 60 % and waits for the preview from the
// WebVTT thumbnail track (a tile of a sprite sheet), and has axe-core audit the page with
// the player's controls on it. Run by tests/integration/uploads/clients.rs.
//
//   node player_plays.mjs --page URL --screenshots DIR
//
// Prints one JSON line: {"currentSrc", "currentTime", "videoWidth", "videoHeight",
// "readyState", "mediaError" (the media element's error code, or null), "controls" (whether
// Plyr dresses the video), "poster", "preview": {"src", "naturalWidth", "time"},
// "consoleErrors", "violations"}. Exits 1 on an error (after a line {"error": ...}: no
// <video>, play() refused, no preview), 2 on missing arguments.

import { join } from "node:path";
import { audit, collectErrors, deadline, playASecond, requiredOptions, withChromium } from "./chromium.mjs";

const opts = requiredOptions("player_plays.mjs", ["page", "screenshots"]);
deadline(60_000);

await withChromium(async (browser) => {
  const page = await (await browser.newContext({ viewport: { width: 1024, height: 768 } })).newPage();
  page.setDefaultTimeout(45_000);
  const errors = [];
  collectErrors(page, errors);
  await page.goto(opts.page);
  const played = await playASecond(page);
  await page.evaluate(() => document.querySelector("video").pause());
  const controls = await page.locator(".plyr video").count() === 1;
  const poster = await page.locator("video").getAttribute("poster");
  // Hovering the seek bar shows the thumbnail of the time under the pointer.
  const bar = page.locator(".plyr__progress input[type=range]");
  // Paused, the controls slide back into view: the bar is measured once it stands still.
  await page.locator(".plyr").hover({ position: { x: 20, y: 20 } });
  let box = await bar.boundingBox();
  for (let settled = false; !settled; ) {
    await page.waitForTimeout(250);
    const again = await bar.boundingBox();
    settled = again.x === box.x && again.y === box.y && again.width === box.width;
    box = again;
  }
  // The pointer comes onto the bar and moves along it, as a hand moves a mouse.
  await page.mouse.move(box.x + 2, box.y + box.height / 2);
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
  await page.locator(".plyr__preview-thumb--is-shown").waitFor();
  const preview = await page.locator(".plyr__preview-thumb__image-container img").last().evaluate(async (img) => {
    if (!img.complete) await new Promise((r) => img.addEventListener("load", r, { once: true }));
    return {
      src: new URL(img.src).pathname,
      naturalWidth: img.naturalWidth,
      time: document.querySelector(".plyr__preview-thumb__time-container")?.textContent ?? null,
    };
  });
  await page.screenshot({ path: join(opts.screenshots, "player-preview.png") });
  const violations = await audit(page, "player");
  return { ...played, controls, poster, preview, consoleErrors: errors, violations };
});
