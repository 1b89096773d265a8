// An LTI 1.3 Deep Linking round trip in a real browser (Debian's Chromium, driven by
// playwright-core), inside the iframe of a course page as an LMS shows a tool: the platform
// is tests/e2e/lti13_platform.py (PyPI lti1p3platform). Run by tests/integration/lti13.rs.
//
//   node lti13_iframe.mjs --platform URL --title TITLE
//
// 1. alice (an Instructor) opens the course page with a Deep Linking frame: medialib's picker
//    shows in the frame; she inserts the media titled TITLE; the platform verifies the signed
//    response and shows "Linked: TITLE" in the frame.
// 2. bob (a Learner), in a browser context of his own, opens the course page: the frame
//    launches the link the platform made, and medialib's player in it plays a second.
//
// Prints one JSON line: {"picker": heading, "linked": text, "player": {currentTime, ...},
// "consoleErrors": [...]}; on a failure {"error", "at"} and exit 1.

import { deadline, emit, launch, playASecond, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("lti13_iframe.mjs", ["platform", "title"]);
deadline(150_000);

const errors = [];
let browser;
let at;
try {
  browser = await launch();
  const open = async (user, kind) => {
    const page = await (await browser.newContext({ viewport: { width: 1024, height: 800 } })).newPage();
    page.setDefaultTimeout(30_000);
    page.on("pageerror", (e) => errors.push(`${user}: page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !m.location().url.endsWith("/favicon.ico")) {
        errors.push(`${user}: ${m.text()} (${m.location().url})`);
      }
    });
    at = `${user}'s course page`;
    await page.goto(new URL(`/course?user=${user}&kind=${kind}`, opts.platform).href);
    return page;
  };

  // 1. The teacher picks.
  const teacher = await open("alice", "deep");
  const frame = teacher.frameLocator("#tool");
  const heading = frame.getByRole("heading", { name: "Pick media for the course" });
  await heading.waitFor();
  at = "the picker";
  const picker = await heading.textContent();
  await frame.getByRole("button", { name: `Insert ${opts.title}` }).click();
  const linked = frame.locator("#linked");
  await linked.waitFor();
  const linkedText = await linked.textContent();

  // 2. The student watches.
  const student = await open("bob", "resource");
  at = "the player in bob's frame";
  await student.frameLocator("#tool").locator("video").waitFor();
  const playerFrame = await (await student.locator("#tool").elementHandle()).contentFrame();
  const player = await playASecond(playerFrame);
  player.url = playerFrame.url();

  emit({ picker, linked: linkedText, player, consoleErrors: errors });
  await browser.close();
  process.exit(0);
} catch (e) {
  emit({ error: String(e?.stack ?? e), at, consoleErrors: errors });
  await browser?.close().catch(() => {});
  process.exit(1);
}
