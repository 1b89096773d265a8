"""Uploads one file to medialib with tuspy (the tus project's Python client), as the upload
tests of tests/integration/uploads/clients.rs run it.

    python tus_upload.py --endpoint URL --token TOKEN --file PATH
        [--chunk-size BYTES] [--stop-after BYTES] [--upload-url URL]

--endpoint     the creation URL, `{base}/api/upload/c/{C}/o/0/`
--chunk-size   bytes per PATCH (default: the whole file in one)
--stop-after   end this process once the server has acknowledged at least this many bytes
               (tuspy's `upload(stop_at=...)`): an interrupted upload
--upload-url   resume this upload (tuspy's `Uploader(url=...)`, which asks the server for the
               offset with HEAD) instead of creating one

Every PATCH carries `Upload-Checksum: sha256 ...` (tuspy's checksum extension, switched from
its default sha1 to the sha256 medialib offers).

Prints one JSON line: {"url", "uuid", "offset", "size", "resumed", "stopped"}. Exits 1 on an
error (after a line {"error": ...}), 2 on bad arguments.
"""

import argparse
import hashlib
import json
import os
import sys

from tusclient import client
from tusclient.uploader import Uploader


class Sha256Uploader(Uploader):
    """tuspy's uploader with `Upload-Checksum: sha256` (its default is sha1)."""

    CHECKSUM_ALGORITHM_PAIR = ("sha256", hashlib.sha256)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--stop-after", type=int, default=None)
    parser.add_argument("--upload-url", default=None)
    opts = parser.parse_args()

    size = os.path.getsize(opts.file)
    tus = client.TusClient(opts.endpoint, headers={"Authorization": f"Bearer {opts.token}"})
    kwargs = {
        "file_path": opts.file,
        "client": tus,
        "metadata": {"filename": "e2e-upload.bin", "filetype": "application/octet-stream"},
        "upload_checksum": True,
    }
    if opts.chunk_size:
        kwargs["chunk_size"] = opts.chunk_size
    if opts.upload_url:
        kwargs["url"] = opts.upload_url
    try:
        # With a URL, the constructor asks the server where the upload stands (HEAD).
        uploader = Sha256Uploader(**kwargs)
        resumed_at = uploader.offset if opts.upload_url else None
        uploader.upload(stop_at=opts.stop_after)
    except Exception as error:  # noqa: BLE001 - any failure is the test's to report
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
        return 1
    url = uploader.url
    print(
        json.dumps(
            {
                "url": url,
                "uuid": url.rstrip("/").rsplit("/", 1)[-1],
                "offset": uploader.offset,
                "size": size,
                "resumed": opts.upload_url is not None,
                "resumed_at": resumed_at,
                "stopped": uploader.offset < size,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
