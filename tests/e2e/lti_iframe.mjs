// An LMS course page launches medialib in an iframe, as Moodle and Canvas show a tool: this
// script serves the course page itself, with a form that posts a signed LTI 1.1 launch (made
// by the Rust test) into an iframe and submits itself. Debian's Chromium (headless,
// playwright-core) opens it twice:
//
// - same site: the course page on 127.0.0.1 (another port than medialib's, the same site);
// - cross site: the course page on localhost, another site than 127.0.0.1.
//
// Each time it records whether the picker showed in the frame, and whether the session the
// launch set survives a navigation inside the frame (a private video's player, rather than
// a page that asks to sign in). The same-site picker is also audited with axe-core (WCAG 2.1 A/AA).
// Run by tests/integration/lti.rs.
//
//   node lti_iframe.mjs --action URL --same JSON --cross JSON --player PATH
//
// JSON: the launch's form fields, [[name, value], ...]. Prints one JSON line:
// {"sameSite": {...}, "crossSite": {...}, "violations": [...]}; {"error"} and exit 1 on a
// failure; 2 on missing arguments.

import { createServer } from "node:http";
import { audit, deadline, requiredOptions, withChromium } from "./chromium.mjs";

const opts = requiredOptions("lti_iframe.mjs", ["action", "same", "cross", "player"]);
deadline(90_000);

const escape = (s) =>
  String(s).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

const coursePage = (fields) => `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Biology 101</title></head>
<body>
<h1>Biology 101</h1>
<form id="launch" method="post" action="${escape(opts.action)}" target="tool">
${fields.map(([n, v]) => `<input type="hidden" name="${escape(n)}" value="${escape(v)}">`).join("\n")}
</form>
<iframe name="tool" title="medialib" width="900" height="600"></iframe>
<script>document.getElementById("launch").submit();</script>
</body></html>`;

const pages = { "/same": coursePage(JSON.parse(opts.same)), "/cross": coursePage(JSON.parse(opts.cross)) };
const server = createServer((req, res) => {
  const body = pages[req.url];
  res.writeHead(body ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
  res.end(body ?? "not found");
});
// Every address (IPv4 and IPv6): "localhost" may resolve to either.
await new Promise((resolve) => server.listen(0, resolve));
const port = server.address().port;
const toolOrigin = new URL(opts.action).origin;

async function visit(browser, url, withAudit) {
  const context = await browser.newContext();
  const tab = await context.newPage();
  tab.setDefaultTimeout(30_000);
  await tab.goto(url);
  const tool = () => tab.frames().find((f) => f.url().startsWith(toolOrigin));
  await tab.waitForFunction(() => document.querySelector("iframe").contentWindow.location.href !== "about:blank")
    .catch(() => {});
  let frame;
  for (let i = 0; i < 300 && !(frame = tool()); i++) await tab.waitForTimeout(100);
  if (!frame) throw new Error(`no frame of ${toolOrigin} in ${url}`);
  await frame.waitForLoadState("load");
  const heading = await frame.locator("h1").first().textContent();
  // What the frame says besides its heading: a refusal's reason, for the test's message.
  const text = (await frame.locator("body").innerText()).replace(/\s+/g, " ").slice(0, 400);
  const violations = withAudit ? await audit(frame, "lti picker") : [];
  // A navigation inside the frame, as a click on a video of the course would be.
  await frame.goto(`${toolOrigin}${opts.player}`);
  const playerTitle = await frame.title();
  const cookies = await context.cookies(toolOrigin);
  await context.close();
  return {
    record: {
      picker: heading.includes("Pick media"),
      heading,
      text,
      playerTitle,
      frameUrl: frame.url(),
      sessionCookie: cookies.some((c) => c.name === "medialib_session"),
    },
    violations,
  };
}

await withChromium(async (browser) => {
  const same = await visit(browser, `http://127.0.0.1:${port}/same`, true);
  const cross = await visit(browser, `http://localhost:${port}/cross`, false);
  server.close();
  return { sameSite: same.record, crossSite: cross.record, violations: same.violations };
});
