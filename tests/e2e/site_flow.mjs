// A person uses medialib's pages in a real browser: Debian's Chromium (headless, driven by
// playwright-core) opens the home page, signs in through its Sign in button with the
// password form, finds the library on the home page, opens it, sees the video's card (its
// still loaded), opens the video's page and plays it there (muted, as a browser allows
// without a gesture) until a second has played; then signs out. Each page is kept as a
// screenshot. Run by tests/integration/uploads/clients.rs.
//
//   node site_flow.mjs --base URL --username U --password P --library TITLE --video TITLE
//                      --screenshots DIR
//
// Each page is audited by axe-core (WCAG 2.1 A and AA).
//
// Prints one JSON line: {"pages": [titles seen], "still": {naturalWidth, naturalHeight},
// "currentSrc", "currentTime", "videoHeight", "mediaError", "signedOut", "violations"}; on a failure a line
// {"error": ..., "at": page URL} and exit 1; 2 on missing arguments.

import { join } from "node:path";
import { audit, collectErrors, deadline, emit, launch, playASecond, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("site_flow.mjs", [
  "base",
  "username",
  "password",
  "library",
  "video",
  "screenshots",
]);
deadline(80_000);

let browser;
let page;
try {
  browser = await launch();
  // A phone-sized window: the pages must work there.
  page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  page.setDefaultTimeout(30_000);
  const errors = [];
  collectErrors(page, errors);
  const pages = [];
  // What axe-core finds on each page (WCAG 2.1 A and AA).
  const violations = [];
  const shot = async (name) => {
    pages.push(await page.title());
    await page.screenshot({ path: join(opts.screenshots, `${name}.png`), fullPage: true });
    violations.push(...(await audit(page, name)));
  };

  await page.goto(opts.base);
  await shot("home-signed-out");
  await page.getByRole("link", { name: "Sign in" }).first().click();
  await page.getByLabel("Username").fill(opts.username);
  await page.getByLabel("Password").fill(opts.password);
  await shot("sign-in");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Your libraries" }).waitFor();
  await shot("home");
  await page.getByRole("link", { name: opts.library }).click();
  await page.getByRole("heading", { name: opts.library }).waitFor();
  const still = await page.locator("ul.members img.still").first();
  await still.waitFor();
  const stillSize = await still.evaluate(async (img) => {
    if (!img.complete) await new Promise((r) => img.addEventListener("load", r, { once: true }));
    return { naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight };
  });
  await shot("library");
  await page.getByRole("link", { name: opts.video }).click();
  await page.locator("video").waitFor();
  const played = await playASecond(page);
  await shot("player");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("link", { name: "Sign in" }).first().waitFor();
  const signedOut = !(await page.getByText("Signed in as").count());
  emit({ pages, still: stillSize, ...played, signedOut, consoleErrors: errors, violations });
  await browser.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e), at: page?.url() });
  await browser?.close().catch(() => {});
  process.exit(1);
}
