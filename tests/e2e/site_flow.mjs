// A person uses medialib's pages in a real browser: Debian's Chromium (headless, driven by
// playwright-core) opens the home page, signs in through its Sign in button with the
// password form, finds the library on the home page, opens it, sees the video's card (its
// still loaded), opens the video's page and plays it there (muted, as a browser allows
// without a gesture) until a second has played. On the library's page, before opening the
// video, they create a sub-library and add a colleague by username with view access. Then
// they sign out, and the colleague signs in in a browser of their own, finds the library on
// their home page (without its admin forms), opens the video and plays it too. Each page is
// kept as a screenshot. Run by tests/integration/uploads/clients.rs.
//
//   node site_flow.mjs --base URL --username U --password P --library TITLE --video TITLE
//                      --colleague U --colleague-password P --screenshots DIR
//
// Each page is audited by axe-core (WCAG 2.1 A and AA).
//
// Prints one JSON line: {"pages": [titles seen], "still": {naturalWidth, naturalHeight},
// "currentSrc", "currentTime", "videoHeight", "mediaError", "signedOut", "subLibrary" (its
// link was listed), "people" (the usernames in the People table after the addition),
// "colleague": {"pages", "currentTime", "mediaError", "adminForms"}, "violations"}; on a failure a line
// {"error": ..., "at": page URL} and exit 1; 2 on missing arguments.

import { join } from "node:path";
import { audit, collectErrors, deadline, emit, launch, playASecond, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("site_flow.mjs", [
  "base",
  "username",
  "password",
  "library",
  "video",
  "colleague",
  "colleague-password",
  "screenshots",
]);
deadline(140_000);

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
  // A sub-library for a course, then a colleague who may view the library.
  const newLibrary = page.getByRole("form", { name: "New sub-library" });
  await newLibrary.getByLabel("Title").fill("Course 101");
  await newLibrary.getByRole("button", { name: "Create" }).click();
  await page.getByRole("link", { name: "Course 101" }).waitFor();
  const subLibrary = (await page.getByRole("link", { name: "Course 101" }).count()) === 1;
  const adding = page.getByRole("form", { name: "Add a person" });
  await adding.getByLabel("Add a person by username").fill(opts.colleague);
  await adding.getByLabel("Access").selectOption("view");
  await adding.getByRole("button", { name: "Add" }).click();
  await page.getByRole("cell", { name: opts.colleague, exact: true }).first().waitFor();
  const people = await page.locator("table.people tbody tr td:nth-child(2)").allTextContents();
  await shot("library-people");
  await page.getByRole("link", { name: opts.video }).click();
  await page.locator("video").waitFor();
  const played = await playASecond(page);
  await shot("player");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("link", { name: "Sign in" }).first().waitFor();
  const signedOut = !(await page.getByText("Signed in as").count());

  // The colleague, in a browser context of their own.
  const own = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  own.setDefaultTimeout(30_000);
  collectErrors(own, errors);
  page = own;
  const colleaguePages = [];
  await page.goto(opts.base);
  await page.getByRole("link", { name: "Sign in" }).first().click();
  await page.getByLabel("Username").fill(opts.colleague);
  await page.getByLabel("Password").fill(opts["colleague-password"]);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Your libraries" }).waitFor();
  colleaguePages.push(await page.title());
  await page.getByRole("link", { name: opts.library }).click();
  await page.getByRole("heading", { name: opts.library }).waitFor();
  colleaguePages.push(await page.title());
  const adminForms = await page.getByRole("heading", { name: "People" }).count();
  await page.screenshot({ path: join(opts.screenshots, "colleague-library.png"), fullPage: true });
  violations.push(...(await audit(page, "colleague-library")));
  await page.getByRole("link", { name: opts.video }).click();
  await page.locator("video").waitFor();
  colleaguePages.push(await page.title());
  const colleaguePlayed = await playASecond(page);
  await page.screenshot({ path: join(opts.screenshots, "colleague-player.png"), fullPage: true });
  const colleague = {
    pages: colleaguePages,
    currentTime: colleaguePlayed.currentTime,
    mediaError: colleaguePlayed.mediaError,
    adminForms,
  };
  emit({ pages, still: stillSize, ...played, signedOut, subLibrary, people, colleague, consoleErrors: errors, violations });
  await browser.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e), at: page?.url() });
  await browser?.close().catch(() => {});
  process.exit(1);
}
