// What the browser scripts share: their options, their one JSON line out, their deadline,
// and Debian's Chromium started headless the same way (no browser is downloaded).

import { writeSync } from "node:fs";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

// The script's string options, each required: exits 2 naming the first one missing.
export function requiredOptions(script, names) {
  const options = Object.fromEntries(names.map((n) => [n, { type: "string" }]));
  const { values } = parseArgs({ options });
  for (const name of names) {
    if (!values[name]) {
      process.stderr.write(`${script}: --${name} is required\n`);
      process.exit(2);
    }
  }
  return values;
}

// Writes one JSON line synchronously: a pipe write is asynchronous in Node, and an exit
// right after one can cut a long line.
export function emit(record) {
  writeSync(1, `${JSON.stringify(record)}\n`);
}

// Ends the script with an error line once `ms` have passed.
export function deadline(ms) {
  const timer = setTimeout(() => {
    emit({ error: `timed out after ${ms / 1000} s` });
    process.exit(1);
  }, ms);
  timer.unref();
}

// Debian's Chromium (or $CHROMIUM), headless, that may play media without a gesture.
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--autoplay-policy=no-user-gesture-required",
    ],
  });
}
