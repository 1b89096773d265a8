// A person uploads from a library page in a real browser (Debian's Chromium, driven by
// playwright-core): signs in, opens the library, chooses a generated clip, watches its
// progress bar reach "Uploaded" and the card's processing end with a still, without
// reloading; opens it and plays it. Then a larger file: its second chunk is held back, the
// page is reloaded mid-upload, the same file is chosen again, and the upload goes on from
// where the server has it (no new upload is created). Screenshots of each step are kept.
// Run by tests/integration/uploads/clients.rs.
//
//   node page_upload.mjs --base URL --library PATH --username U --password P --clip FILE
//                        --big FILE --screenshots DIR
//
// Prints one JSON line: {"clip": {currentTime, videoHeight, mediaError}, "stillWidth",
// "resume": {"offsetsBefore": [...], "offsetsAfter": [...], "postsAfter", "status"},
// "consoleErrors": [...], "violations": [axe-core's findings at each screenshot]}; on a failure
// {"error", "at": page URL, "uploads": the upload list's text, "trail": each upload request's
// method, offset, status or failure and timing} and exit 1.

import { basename, join } from "node:path";
import { audit, collectErrors, deadline, emit, launch, playASecond, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("page_upload.mjs", [
  "base",
  "library",
  "username",
  "password",
  "clip",
  "big",
  "screenshots",
]);
deadline(150_000);

let browser;
let page;
// Set while the held request is cut by the reload (the browser logs that as an error).
let cutting = false;
// Releases the held PATCH (set once it is held).
let held = null;
// Each upload request: method, offset, status (or the failure), and when it started and
// ended (ms since the start), so that a failure shows where the upload stalled.
const started = Date.now();
const trail = [];
const entries = new WeakMap();
// The page's console errors.
const errors = [];
try {
  browser = await launch();
  page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  page.setDefaultTimeout(60_000);
  // Not the held request that the reload cuts.
  collectErrors(page, errors, () => cutting);
  page.on("request", (request) => {
    if (!request.url().includes("/api/upload/")) return;
    const entry = {
      method: request.method(),
      offset: request.headers()["upload-offset"],
      at: Date.now() - started,
    };
    trail.push(entry);
    entries.set(request, entry);
    request
      .response()
      .then((r) => {
        entry.status = r?.status();
        entry.took = Date.now() - started - entry.at;
      })
      .catch(() => {});
  });
  page.on("requestfailed", (request) => {
    const entry = entries.get(request);
    if (entry) entry.failed = request.failure()?.errorText;
  });
  // What axe-core finds (WCAG 2.1 A and AA) on the page at each screenshot.
  const violations = [];
  const shot = async (name) => {
    await page.screenshot({ path: join(opts.screenshots, `${name}.png`), fullPage: true });
    violations.push(...(await audit(page, name)));
  };

  // Chooses a file once the page's script has shown the drop zone, which it does in the same
  // run that listens for the input's change: setInputFiles does not wait for visibility, and
  // a file chosen before that (a slow machine) would start no upload.
  const choose = async (file) => {
    const input = page.getByLabel(/Choose video, audio/);
    await input.waitFor();
    await input.setInputFiles(file);
  };

  const library = new URL(opts.library, opts.base).href;
  await page.goto(library);
  // Not signed in: the library page sends the browser to sign in, and back after.
  await page.getByLabel("Username").fill(opts.username);
  await page.getByLabel("Password").fill(opts.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Upload" }).waitFor();

  // 1. The clip, whole: progress to "Uploaded", then processing ends on the card by itself.
  const clipName = basename(opts.clip);
  await choose(opts.clip);
  const item = page.locator("ul.uploads li", { hasText: clipName });
  await item.getByText(/^Uploaded/).waitFor();
  await shot("upload-done");
  const card = page.locator("ul.members li", { hasText: clipName });
  const still = card.locator("img.still");
  await still.waitFor({ timeout: 120_000 });
  const stillWidth = await still.evaluate(async (img) => {
    if (!img.complete) await new Promise((r) => img.addEventListener("load", r, { once: true }));
    return img.naturalWidth;
  });
  await shot("upload-processed");
  await card.getByRole("link", { name: clipName }).click();
  await page.locator("video").waitFor();
  const clip = await playASecond(page);

  // 2. The big file: its first chunk goes through, its second is held until the reload.
  await page.goto(library);
  const offsets = [];
  let posts = 0;
  await page.route("**/api/upload/**", async (route) => {
    const request = route.request();
    if (request.method() === "POST") posts++;
    if (request.method() === "PATCH") {
      offsets.push(Number(request.headers()["upload-offset"]));
      if (offsets.length === 2 && held === null) {
        await new Promise((release) => (held = release));
        return route.abort().catch(() => {});
      }
    }
    return route.continue();
  });
  await choose(opts.big);
  while (held === null) await new Promise((r) => setTimeout(r, 50));
  await shot("upload-held");
  const offsetsBefore = offsets.splice(0);
  const postsBefore = posts;
  cutting = true;
  await page.reload();
  held();
  await page.getByRole("heading", { name: "Upload" }).waitFor();
  cutting = false;
  posts = 0;
  await choose(opts.big);
  const bigItem = page.locator("ul.uploads li", { hasText: basename(opts.big) });
  await bigItem.getByText(/^Uploaded/).waitFor();
  const status = await bigItem.locator(".status").textContent();
  await shot("upload-resumed");
  emit({
    clip,
    stillWidth,
    resume: { offsetsBefore, postsBefore, offsetsAfter: offsets, postsAfter: posts, status },
    consoleErrors: errors,
    violations,
  });
  await browser.close();
  process.exit(0);
} catch (e) {
  const uploads = await page
    ?.locator("ul.uploads")
    .innerText({ timeout: 1000 })
    .catch(() => null);
  emit({ error: String(e?.stack ?? e), at: page?.url(), uploads, trail, consoleErrors: errors });
  await browser?.close().catch(() => {});
  process.exit(1);
}
