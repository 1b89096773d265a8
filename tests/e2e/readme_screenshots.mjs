// Takes the README's screenshots of a running `medialib demo` (scripts/readme-screenshots
// runs it): Debian's Chromium (headless, driven by playwright-core) signs in as the demo
// user and photographs the home page, the library page, the demo video's page with the seek
// bar's preview showing, the audio recording's page with its waveform, a library page on a
// phone-sized screen, and the API reference. JPEG, to keep the repository light.
//
//   node readme_screenshots.mjs --base URL --password P --out DIR
//
// Prints one JSON line {"written": [file names]}; on a failure {"error": ...} and exit 1.

import { join } from "node:path";
import { deadline, requiredOptions, withChromium } from "./chromium.mjs";

const opts = requiredOptions("readme_screenshots.mjs", ["base", "password", "out"]);
deadline(120_000);

const written = [];
await withChromium(async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const shot = async (p, name, fullPage = false) => {
    await p.screenshot({ path: join(opts.out, name), type: "jpeg", quality: 70, fullPage });
    written.push(name);
  };
  const base = opts.base.replace(/\/$/, "");

  await page.goto(`${base}/login?next=/`);
  await page.getByLabel("Username").fill("demo");
  await page.getByLabel("Password").fill(opts.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Your libraries" }).waitFor();
  await shot(page, "home.jpg");

  await page.locator("ul.libraries a").first().click();
  await page.locator("ul.members img.still").first().waitFor();
  await page.waitForLoadState("networkidle");
  const library = page.url();
  await shot(page, "library.jpg");

  await page.getByRole("link", { name: "Welcome to medialib" }).click();
  await page.locator(".plyr").waitFor();
  await page.waitForLoadState("networkidle");
  const bar = page.locator(".plyr__progress input[type=range]");
  const box = await bar.boundingBox();
  await page.mouse.move(box.x + 2, box.y + box.height / 2);
  await page.mouse.move(box.x + box.width * 0.55, box.y + box.height / 2, { steps: 5 });
  await page.locator(".plyr__preview-thumb--is-shown img").waitFor();
  await page.waitForTimeout(300);
  await shot(page, "player.jpg");

  await page.goto(library);
  await page.getByRole("link", { name: "Lecture recording, week 1" }).click();
  await page.getByRole("slider", { name: "Waveform: seek" }).waitFor();
  await shot(page, "audio.jpg");

  const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  await phone.context().addCookies(await context.cookies());
  await phone.goto(library);
  await phone.locator("ul.members img.still").first().waitFor();
  await phone.waitForLoadState("networkidle");
  await shot(phone, "phone-library.jpg");

  await page.goto(`${base}/api/docs`);
  await page.locator(".opblock").first().waitFor();
  await shot(page, "api-docs.jpg");

  return { written };
}, () => ({ written }));
