// Another site embeds medialib's player, as a course page does: this script serves a page
// of its own on another origin (127.0.0.1, another port) that puts the embed code (the embed
// record's iframe) and, beside it, the permLink with the LMS plugins' query
// (`?share=false&title=false&autoplay=true&cc_load_policy=1`) in iframes. Debian's Chromium
// (headless, playwright-core) opens that page; the page listens to the players' postMessage
// events and drives the first with play, seek and pause. Run by
// tests/integration/uploads/clients.rs.
//
//   node embed_api.mjs --iframe HTML --permlink URL
//
// Prints one JSON line: {"embed": [events of the embed code's player], "afterSeek",
// "permLink": [events of the permLink's player], "permLinkTitle"}; on a failure {"error"}
// and exit 1; 2 on missing arguments.

import { createServer } from "node:http";
import { deadline, emit, launch, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("embed_api.mjs", ["iframe", "permlink"]);
deadline(80_000);

const lms = `${opts.permlink}?share=false&title=false&autoplay=true&cc_load_policy=1`;
const page = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>A course page</title></head>
<body>
<h1>Week 1</h1>
<div id="embed">${opts.iframe}</div>
<iframe id="lms" src="${lms.replace(/"/g, "&quot;")}" width="640" height="360" title="LMS embed"></iframe>
<script>
  window.events = { embed: [], lms: [] };
  window.addEventListener("message", (e) => {
    if (!e.data || e.data.source !== "medialib") return;
    const which = e.source === document.getElementById("lms").contentWindow ? "lms" : "embed";
    window.events[which].push(e.data);
  });
  window.command = (method, value) =>
    document.querySelector("#embed iframe").contentWindow.postMessage(
      { target: "medialib", method, value }, "*");
</script>
</body></html>`;

const server = createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(page);
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

let browser;
try {
  browser = await launch();
  const tab = await (await browser.newContext()).newPage();
  tab.setDefaultTimeout(30_000);
  await tab.goto(`${origin}/`);
  const until = (test) => tab.waitForFunction(test, null, { timeout: 30_000 });
  // The embed code's player says it is ready; it plays, seeks and pauses when told.
  await until(() => window.events.embed.some((e) => e.event === "ready"));
  await tab.evaluate(() => window.command("play"));
  await until(() => window.events.embed.some((e) => e.event === "timeupdate" && e.currentTime > 0.5));
  await tab.evaluate(() => window.command("seek", 2.5));
  await until(() => window.events.embed.some((e) => e.event === "timeupdate" && e.currentTime >= 2.5));
  const afterSeek = await tab.evaluate(() => window.events.embed.at(-1).currentTime);
  await tab.evaluate(() => window.command("pause"));
  await until(() => window.events.embed.some((e) => e.event === "pause"));
  // The permLink with the plugins' query plays by itself (autoplay) and reports it.
  await until(() => window.events.lms.some((e) => e.event === "play"));
  const frame = tab.frames().find((f) => f.url().includes("/m/"));
  const permLinkTitle = frame ? await frame.evaluate(() => !!document.querySelector("h1")) : null;
  const names = (list) => [...new Set(list.map((e) => e.event))];
  emit({
    embed: names(await tab.evaluate(() => window.events.embed)),
    afterSeek,
    permLink: names(await tab.evaluate(() => window.events.lms)),
    permLinkFrameUrl: frame ? frame.url() : null,
    permLinkTitle,
  });
  await browser.close();
  server.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e) });
  await browser?.close().catch(() => {});
  process.exit(1);
}
