// An audio recording's player page in a real browser (Debian's Chromium, driven by
// playwright-core): the page draws the recording's waveform peaks as a seek bar above the
// controls. The script waits for the drawing, counts the painted pixels, plays a second
// (muted), then seeks with the keyboard on the waveform (End, then Home) and has axe-core
// audit the page. Run by tests/integration/uploads/clients.rs.
//
//   node waveform.mjs --page URL --screenshots DIR
//
// Prints one JSON line: {"painted" (pixels with any colour), "pictureHidden" (the waveform
// picture gave way to the drawing), "played" (currentTime after a second of play),
// "afterEnd", "afterHome" (currentTime after each key), "duration", "valueText" (the
// slider's aria-valuetext at the end), "consoleErrors", "violations"}; on a failure
// {"error": ...} and exit 1; 2 on missing arguments.

import { join } from "node:path";
import { audit, collectErrors, deadline, requiredOptions, withChromium } from "./chromium.mjs";

const opts = requiredOptions("waveform.mjs", ["page", "screenshots"]);
deadline(60_000);

await withChromium(async (browser) => {
  const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  page.setDefaultTimeout(30_000);
  const errors = [];
  collectErrors(page, errors);
  await page.goto(opts.page);
  const wave = page.getByRole("slider", { name: "Waveform: seek" });
  await wave.waitFor();
  const painted = await wave.evaluate((c) => {
    const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
    return n;
  });
  const pictureHidden = await page.locator(".waveform-picture").evaluate((img) => !img.checkVisibility());
  const played = await page.evaluate(async () => {
    const audio = document.querySelector("audio");
    audio.muted = true;
    await audio.play();
    const started = performance.now();
    while (audio.currentTime < 1 && !audio.error && performance.now() - started < 20_000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    audio.pause();
    return audio.currentTime;
  });
  const time = () => page.evaluate(() => document.querySelector("audio").currentTime);
  await wave.focus();
  await page.keyboard.press("End");
  const afterEnd = await time();
  const valueText = await wave.getAttribute("aria-valuetext");
  await page.keyboard.press("Home");
  const afterHome = await time();
  const duration = await page.evaluate(() => document.querySelector("audio").duration);
  await page.screenshot({ path: join(opts.screenshots, "audio-waveform.png"), fullPage: true });
  const violations = await audit(page, "audio");
  return { painted, pictureHidden, played, afterEnd, afterHome, duration, valueText, consoleErrors: errors, violations };
});
