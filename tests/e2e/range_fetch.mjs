// A real browser reads part of a delivered media file: Debian's Chromium (headless, driven by
// playwright-core) opens a page of medialib's origin, then
//   1. `fetch(url, {headers: {Range: 'bytes=FROM-TO'}})` from that page, and
//   2. a `<video src=url>` element, whose media loader asks for the file with a Range header
//      of its own (the answer is watched on the network; the bytes need not be a video).
// Run by tests/integration/uploads/clients.rs.
//
//   node range_fetch.mjs --page URL --url MEDIA_URL --range FROM-TO
//
// Prints one JSON line: {"fetch": {"status", "contentRange", "acceptRanges", "base64"},
// "video": {"requestRange", "status", "contentRange"} or null}. Exits 1 on an error (after a
// line {"error": ...}), 2 on missing arguments.

import { deadline, emit, launch, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("range_fetch.mjs", ["page", "url", "range"]);
deadline(60_000);

let browser;
try {
  browser = await launch();
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(30_000);
  await page.goto(opts.page);

  const fetched = await page.evaluate(
    async ({ url, range }) => {
      const res = await fetch(url, { headers: { Range: `bytes=${range}` } });
      const bytes = new Uint8Array(await res.arrayBuffer());
      let text = "";
      for (const b of bytes) text += String.fromCharCode(b);
      return {
        status: res.status,
        contentRange: res.headers.get("content-range"),
        acceptRanges: res.headers.get("accept-ranges"),
        base64: btoa(text),
      };
    },
    { url: opts.url, range: opts.range },
  );

  // The media element's own request: Chromium asks with `Range: bytes=0-`.
  const mediaPath = new URL(opts.url).pathname;
  const answered = page
    .waitForResponse((r) => new URL(r.url()).pathname === mediaPath, { timeout: 15_000 })
    .then(async (r) => ({
      requestRange: (await r.request().allHeaders()).range ?? null,
      status: r.status(),
      contentRange: r.headers()["content-range"] ?? null,
    }))
    .catch(() => null);
  await page.evaluate((url) => {
    const video = document.createElement("video");
    video.preload = "auto";
    video.src = url;
    document.body.appendChild(video);
  }, opts.url);
  const video = await answered;

  emit({ fetch: fetched, video });
  await browser.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e) });
  await browser?.close().catch(() => {});
  process.exit(1);
}
