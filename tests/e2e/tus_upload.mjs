// Uploads one file to medialib with tus-js-client (the tus project's own JavaScript client,
// in its Node.js build), as the upload tests of tests/integration/uploads/clients.rs run it.
//
//   node tus_upload.mjs --endpoint URL --token TOKEN --file PATH
//       [--chunk-size BYTES] [--stop-after BYTES] [--url-storage FILE] [--upload-url URL]
//
// --endpoint     the creation URL, `{base}/api/upload/c/{C}/o/0/`
// --chunk-size   bytes per PATCH (default: the whole file in one)
// --stop-after   end this process (exit 0, no goodbye to the server) as soon as the server
//                has acknowledged at least this many bytes: an interrupted upload
// --url-storage  a JSON file where tus-js-client keeps the upload's URL under the file's
//                fingerprint (FileUrlStorage); a later process given the same file resumes
//                the upload it finds there (findPreviousUploads + resumeFromPreviousUpload)
// --upload-url   resume this upload (tus-js-client's `uploadUrl`) instead of creating one
//
// Prints one JSON line: {"url", "uuid", "offset", "size", "resumed", "stopped"} (offset: the
// bytes the server acknowledged when the process ended). Exits 1 on an error (after a line
// {"error": ...}), 2 on missing arguments.

import * as fs from "node:fs";
import { FileUrlStorage, Upload } from "tus-js-client";

function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || argv[i + 1] === undefined) {
      console.error(`bad argument ${argv[i]}`);
      process.exit(2);
    }
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const required of ["endpoint", "token", "file"]) {
    if (!out[required]) {
      console.error(`--${required} is required`);
      process.exit(2);
    }
  }
  return out;
}

function report(line) {
  // Written synchronously, so that an exit right after it loses nothing.
  fs.writeSync(1, `${JSON.stringify(line)}\n`);
}

const opts = args();
const size = fs.statSync(opts.file).size;
const stopAfter = opts["stop-after"] === undefined ? null : Number(opts["stop-after"]);
let resumed = false;

const upload = new Upload(fs.createReadStream(opts.file), {
  endpoint: opts.endpoint,
  uploadUrl: opts["upload-url"] || null,
  chunkSize: opts["chunk-size"] === undefined ? Infinity : Number(opts["chunk-size"]),
  uploadSize: size,
  retryDelays: [],
  headers: { Authorization: `Bearer ${opts.token}` },
  metadata: { filename: "e2e-upload.bin", filetype: "application/octet-stream" },
  urlStorage: opts["url-storage"] ? new FileUrlStorage(opts["url-storage"]) : undefined,
  storeFingerprintForResuming: Boolean(opts["url-storage"]),
  removeFingerprintOnSuccess: true,
  onChunkComplete(_chunk, accepted) {
    if (stopAfter !== null && accepted >= stopAfter && accepted < size) {
      report({ url: upload.url, uuid: uuid(upload.url), offset: accepted, size, resumed, stopped: true });
      // As a killed client would: no abort, no DELETE, the process just ends.
      process.exit(0);
    }
  },
  onSuccess() {
    report({ url: upload.url, uuid: uuid(upload.url), offset: size, size, resumed, stopped: false });
    process.exit(0);
  },
  onError(error) {
    report({ error: String(error) });
    process.exit(1);
  },
});

function uuid(url) {
  return url ? url.replace(/\/+$/, "").split("/").pop() : null;
}

if (opts["url-storage"] && !opts["upload-url"]) {
  const previous = await upload.findPreviousUploads();
  if (previous.length > 0) {
    upload.resumeFromPreviousUpload(previous[0]);
    resumed = true;
  }
}
if (opts["upload-url"]) {
  resumed = true;
}
upload.start();
