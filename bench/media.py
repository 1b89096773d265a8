"""The media benchmark's client, sink and report (bench/media.sh, issue 19). Standard library only.

Usage:
  media.py sink PORT
      A bare HTTP/1.1 sink on 127.0.0.1:PORT, the upload ceiling: it reads each request's
      headers and `Content-Length` bytes of body into one buffer it never looks at, and answers
      as a tus server would (POST: 201 with a `Location`; PATCH: 204 with the new
      `Upload-Offset`), so the same driver runs against it unchanged. Keep-alive, a thread per
      connection. Runs until killed.
  media.py upload BASE TOKEN LIBRARY FILE OUT [--length N] [--chunk N] [--parallel N]
                  [--rss-pid PID] [--name NAME]
      tus: N uploads at once (default 1), each a POST creating an object in LIBRARY, then
      PATCHes of --chunk bytes (default 8 MiB) of the first --length bytes of FILE (default:
      all of it), each on one keep-alive connection; every answer is checked (201, 204 and its
      `Upload-Offset`). With --rss-pid, samples /proc/PID/status (VmRSS every 20 ms, VmHWM at
      the end) while they run. Writes OUT (JSON): bytes, seconds (from before the first POST
      to the last answer), MiB/s of all bytes together, each upload's uuid and seconds, and
      the RSS figures.
  media.py s3put ENDPOINT KEY SECRET BUCKET FILE OUT [--chunk N]
      Garage's own rate, for the report only: the same bytes as a multipart upload in parts of
      --chunk bytes, one after the other, straight to the S3 API (boto3, when importable).
  media.py url BASE TOKEN LIBRARY UUID
      Prints the path of the object's delivery URL (`files[0].url` of the media call).
  media.py segments BASE READY OUT
      Follows the HLS master playlist of a processed video (READY: what `bench/pipeline.py
      wait` wrote, the media call once `ready`) to the rendition with the highest
      `BANDWIDTH` and writes OUT (JSON): that rendition's name, the delivery path of the file
      its segments are ranges of (`single_file` packaging), the path of that file under its
      object (`hls/720p.m4s`), and each media segment's offset and length from its
      `#EXT-X-BYTERANGE` lines, as a player reads them.
  media.py report RESULTS_DIR OUT_JSON OUT_MD [--command C] [--smoke 0|1]
      Turns results/*.json into OUT_JSON and the "Media" section of OUT_MD (between
      `<!-- media -->` and `<!-- /media -->`, replaced in place; inserted before "## Analysis"
      the first time; bench/report.py keeps it when it rewrites the page).
"""

import base64
import datetime
import glob
import http.client
import json
import os
import platform
import re
import socket
import socketserver
import statistics
import sys
import threading
import time
import urllib.parse

from report import provenance

MIB = 1024 * 1024


def die(message):
    sys.exit(f"media.py: {message}")


# --- the sink ---------------------------------------------------------------------------


class Sink(socketserver.BaseRequestHandler):
    """One keep-alive connection: reads requests, discards their bodies, answers like tus."""

    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray(4 * MIB)
        view = memoryview(buf)
        pending = b""
        uploads = 0
        while True:
            while b"\r\n\r\n" not in pending:
                data = sock.recv(65536)
                if not data:
                    return
                pending += data
            head, _, pending = pending.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ", 1)[0]
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0"))
            if len(pending) >= length:
                pending, left = pending[length:], 0
            else:
                pending, left = b"", length - len(pending)
            while left > 0:
                n = sock.recv_into(view, min(left, len(buf)))
                if n == 0:
                    return
                left -= n
            if method == "POST":
                uploads += 1
                body = b'{"uuid": "sink"}'
                answer = (
                    "HTTP/1.1 201 Created\r\nTus-Resumable: 1.0.0\r\n"
                    f"Location: /sink/{uploads}\r\nUpload-Offset: 0\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                ).encode() + body
            else:
                offset = int(headers.get("upload-offset", "0"))
                answer = (
                    "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\n"
                    f"Upload-Offset: {offset + length}\r\n\r\n"
                ).encode()
            sock.sendall(answer)


class SinkServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def sink(port):
    with SinkServer(("127.0.0.1", port), Sink) as server:
        server.serve_forever()


# --- the tus driver ---------------------------------------------------------------------


def connection(base):
    u = urllib.parse.urlparse(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    c.connect()
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def one_upload(base, token, library, path, length, chunk, name, out):
    """POST, then PATCHes of `chunk` bytes; fills `out` with the uuid and the seconds."""
    c = connection(base)
    auth = {"Authorization": f"Bearer {token}", "Tus-Resumable": "1.0.0"}
    meta = ",".join(
        f"{k} {base64.b64encode(v.encode()).decode()}"
        for k, v in (("filename", name), ("title", name))
    )
    started = time.monotonic()
    c.request(
        "POST",
        f"/api/upload/c/{library}/o/0/",
        headers=auth | {"Upload-Length": str(length), "Upload-Metadata": meta},
    )
    r = c.getresponse()
    data = r.read()
    if r.status != 201:
        die(f"POST: {r.status} {data[:300]!r}")
    location = urllib.parse.urlparse(r.getheader("Location")).path
    out["uuid"] = json.loads(data)["uuid"]
    fd = os.open(path, os.O_RDONLY)
    # One buffer, read into and sent from again and again: a fresh 8 MiB object per PATCH
    # costs its page faults, which on this kind of machine is a tenth of the ceiling.
    buf = bytearray(chunk)
    try:
        offset = 0
        while offset < length:
            n = os.preadv(fd, [memoryview(buf)[: min(chunk, length - offset)]], offset)
            if n == 0:
                die(f"{path} is shorter than {length} bytes")
            body = memoryview(buf)[:n]
            c.request(
                "PATCH",
                location,
                body=body,
                headers=auth
                | {
                    "Content-Type": "application/offset+octet-stream",
                    "Upload-Offset": str(offset),
                    "Content-Length": str(len(body)),
                },
            )
            r = c.getresponse()
            data = r.read()
            offset += len(body)
            if r.status != 204 or r.getheader("Upload-Offset") != str(offset):
                die(
                    f"PATCH at {offset - len(body)}: {r.status} "
                    f"Upload-Offset {r.getheader('Upload-Offset')} {data[:300]!r}"
                )
    finally:
        os.close(fd)
        c.close()
    out["seconds"] = time.monotonic() - started


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def upload(argv):
    base, token, library, path, out_path = argv[:5]
    opts = dict(zip(argv[5::2], argv[6::2]))
    length = int(opts.get("--length", os.path.getsize(path)))
    chunk = int(opts.get("--chunk", 8 * MIB))
    parallel = int(opts.get("--parallel", "1"))
    pid = opts.get("--rss-pid")
    name = opts.get("--name", "bench.bin")
    results = [{} for _ in range(parallel)]
    errors = []

    def run(i):
        try:
            one_upload(base, token, library, path, length, chunk, name, results[i])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    peak = {"rss": status_kib(pid, "VmRSS") if pid else 0, "start": 0}
    peak["start"] = peak["rss"]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.02):
            peak["rss"] = max(peak["rss"], status_kib(pid, "VmRSS"))

    sampler = threading.Thread(target=sample, daemon=True)
    if pid:
        sampler.start()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(parallel)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - started
    stop.set()
    if pid:
        sampler.join()
    if errors:
        die(f"upload failed: {errors[0]}")
    total = length * parallel
    doc = {
        "bytes": total,
        "length": length,
        "chunk": chunk,
        "parallel": parallel,
        "seconds": seconds,
        "mib_per_second": total / MIB / seconds,
        "uploads": results,
    }
    if pid:
        doc |= {
            "rss_start_kib": peak["start"],
            "rss_peak_kib": peak["rss"],
            "vmhwm_kib": status_kib(pid, "VmHWM"),
            "threads_after": status_kib(pid, "Threads"),
        }
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
    line = (
        f"{parallel} × {length / MIB:.0f} MiB in {chunk / MIB:.0f} MiB PATCHes: "
        f"{seconds:.2f} s, {doc['mib_per_second']:.1f} MiB/s"
    )
    if pid:
        line += (
            f"; server RSS {doc['rss_start_kib'] / 1024:.1f} → peak {doc['rss_peak_kib'] / 1024:.1f}"
            f" MiB, VmHWM {doc['vmhwm_kib'] / 1024:.1f} MiB"
        )
    print(line)


def s3put(argv):
    """Garage's own ingest rate: a multipart upload of the same bytes in parts of `chunk`,
    one after the other (as the tus client sends its PATCHes), straight to the S3 API with
    boto3. Part of the S3 upload's ceiling: it tells Garage's share from medialib's."""
    endpoint, key, secret, bucket, path, out_path = argv[:6]
    opts = dict(zip(argv[6::2], argv[7::2]))
    chunk = int(opts.get("--chunk", 8 * MIB))
    import boto3  # noqa: PLC0415 - optional: only this mode needs it
    from botocore.config import Config  # noqa: PLC0415

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                      aws_secret_access_key=secret, region_name="garage",
                      config=Config(s3={"addressing_style": "path"}))
    length = os.path.getsize(path)
    buf = bytearray(chunk)
    started = time.monotonic()
    upload = s3.create_multipart_upload(Bucket=bucket, Key="direct.bin")["UploadId"]
    parts = []
    with open(path, "rb") as f:
        for number, offset in enumerate(range(0, length, chunk), start=1):
            n = os.preadv(f.fileno(), [memoryview(buf)[: min(chunk, length - offset)]], offset)
            tag = s3.upload_part(Bucket=bucket, Key="direct.bin", UploadId=upload,
                                 PartNumber=number, Body=bytes(buf[:n]))["ETag"]
            parts.append({"ETag": tag, "PartNumber": number})
    s3.complete_multipart_upload(Bucket=bucket, Key="direct.bin", UploadId=upload,
                                 MultipartUpload={"Parts": parts})
    seconds = time.monotonic() - started
    doc = {"bytes": length, "length": length, "chunk": chunk, "parallel": 1,
           "seconds": seconds, "mib_per_second": length / MIB / seconds}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"Garage direct (boto3, {chunk / MIB:.0f} MiB parts): {seconds:.2f} s, "
          f"{doc['mib_per_second']:.1f} MiB/s")


def get(base, path, token=None):
    c = connection(base)
    c.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        die(f"GET {path}: {r.status} {data[:300]!r}")
    return data


def url(base, token, library, uuid):
    data = get(base, f"/api/media/c/{library}/o/{uuid}/", token)
    print(urllib.parse.urlparse(json.loads(data)["files"][0]["url"]).path)


def playlist_ranges(text):
    """The media segments of an HLS media playlist of one file: [(uri, offset, length)].
    An `#EXT-X-BYTERANGE` without `@offset` starts where the previous segment ended."""
    segments, pending, next_offset = [], None, 0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#EXT-X-BYTERANGE:"):
            length, _, offset = line.split(":", 1)[1].partition("@")
            pending = (int(offset) if offset else next_offset, int(length))
        elif line and not line.startswith("#"):
            if pending is None:
                die(f"segment {line!r} without a byte range: not single_file packaging")
            segments.append((line, *pending))
            next_offset = pending[0] + pending[1]
            pending = None
    return segments


def segments(base, ready, out):
    m = json.load(open(ready))["media"]
    hls = [f for f in m["files"] if f["role"] == "hls"]
    if len(hls) != 1:
        die(f"expected one file of role hls in the media call, found {m['files']}")
    master = urllib.parse.urlparse(hls[0]["url"]).path
    variants, bandwidth = [], None
    for line in get(base, master).decode().splitlines():
        if line.startswith("#EXT-X-STREAM-INF:"):
            found = re.search(r"(?:^|[:,])BANDWIDTH=(\d+)", line)
            bandwidth = int(found.group(1)) if found else 0
        elif line.strip() and not line.startswith("#") and bandwidth is not None:
            variants.append((bandwidth, urllib.parse.urljoin(master, line.strip())))
            bandwidth = None
    if not variants:
        die(f"no variant in the master playlist {master}")
    bandwidth, variant = max(variants)
    listed = playlist_ranges(get(base, variant).decode())
    files = {uri for uri, _, _ in listed}
    if len(files) != 1:
        die(f"expected the segments of {variant} in one file, found {sorted(files)}")
    path = urllib.parse.urljoin(variant, files.pop())
    doc = {
        "rendition": os.path.splitext(os.path.basename(variant))[0],
        "bandwidth": bandwidth,
        "path": path,
        "stored_suffix": "hls/" + os.path.basename(path),
        "ranges": [[offset, length] for _, offset, length in listed],
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    lengths = [length for _, length in doc["ranges"]]
    print(f"{doc['rendition']}: {len(lengths)} segments of {min(lengths) / 1024:.0f}–"
          f"{max(lengths) / 1024:.0f} KiB (mean {statistics.mean(lengths) / 1024:.0f}) in {path}")


# --- the report -------------------------------------------------------------------------


def load_json(results, name):
    path = os.path.join(results, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else None


def load_wrk(results, name):
    """Measured wrk runs (run 0 is the warm-up) of NAME.jsonl; the median by req/s."""
    path = os.path.join(results, name + ".jsonl")
    if not os.path.exists(path):
        return None
    rows = [json.loads(line) for line in open(path) if line.strip()]
    measured = [r for r in rows if r["run"] > 0] or rows
    median = sorted(measured, key=lambda r: r["rps"])[len(measured) // 2]
    return {
        "rps": median["rps"],
        "p50_ms": median["p50_us"] / 1000,
        "p99_ms": median["p99_us"] / 1000,
        "rps_runs": [round(r["rps"], 1) for r in measured],
        "mib_per_second": median["bytes"] / MIB / (median["duration_us"] / 1e6),
        "connections": median["connections"],
        # CPU µs per answer of the server (all its processes) and of wrk, where counted.
        "server_cpu_us": median["server_cpu_s"] / median["requests"] * 1e6
        if median.get("server_cpu_s") is not None and median["requests"] else None,
        "client_cpu_us": median["client_cpu_s"] / median["requests"] * 1e6
        if median.get("client_cpu_s") is not None and median["requests"] else None,
    }


def mean(values):
    values = [v for v in values if v]
    return statistics.mean(values) if values else None


def fmt(x, digits=0):
    return "—" if x is None else f"{x:,.{digits}f}"


def report(argv):
    results, out_json, out_md = argv[:3]
    opts = dict(zip(argv[3::2], argv[4::2]))
    j = lambda name: load_json(results, name)  # noqa: E731
    dd = [j("dd_before"), j("dd_after")]
    sink_runs = [j("sink_before"), j("sink_after")]
    dd_mibs = mean([d and d["mib_per_second"] for d in dd])
    sink_mibs = mean([s and s["mib_per_second"] for s in sink_runs])
    ceiling = min(v for v in (dd_mibs, sink_mibs) if v) if (dd_mibs or sink_mibs) else None
    rows = []

    def upload_row(key, label, run, store=None):
        """A tus upload against its ceiling: the machine's (the slower of the disk and the
        loopback), and for S3 also the store's own rate for the same bytes: medialib cannot
        take bytes faster than the store behind it does (docs/decisions.md)."""
        if not run:
            return
        bound, bound_label = ceiling, "min(dd conv=fsync, HTTP sink)"
        if store and bound:
            bound, bound_label = min(bound, store), "min(dd conv=fsync, HTTP sink, Garage alone)"
        ratio = run["mib_per_second"] / bound if bound else None
        rows.append({
            "scenario": key, "label": label, "value": run["mib_per_second"], "unit": "MiB/s",
            "ceiling": bound, "ceiling_label": bound_label,
            "ratio": ratio, "target": "≥ 0.70", "met": None if ratio is None else ratio >= 0.7,
        })
        if store and ceiling:
            machine = run["mib_per_second"] / ceiling
            rows.append({
                "scenario": key + "_machine", "label": label + ", against the disk and loopback only",
                "value": run["mib_per_second"], "unit": "MiB/s", "ceiling": ceiling,
                "ceiling_label": "min(dd conv=fsync, HTTP sink)", "ratio": machine,
                "target": "— (informational)", "met": None,
            })

    upload_row("upload_fs", "tus upload, 8 MiB PATCHes, file system", j("upload_fs"))
    direct_run = j("garage_direct")
    upload_row("upload_s3", "tus upload, 8 MiB PATCHes, Garage (S3)", j("upload_s3"),
               direct_run and direct_run["mib_per_second"])
    for key, label in (("rss_fs_small", "file system"), ("rss_fs_large", "file system"),
                       ("rss_s3_small", "Garage (S3)"), ("rss_s3_large", "Garage (S3)")):
        r = j(key)
        if not r:
            continue
        peak = r["rss_peak_kib"] / 1024
        rows.append({
            "scenario": key,
            "label": f"server RSS, {r['parallel']} uploads of {r['length'] / MIB:.0f} MiB at once, {label}",
            "value": peak, "unit": "MiB", "ceiling": None, "ceiling_label": "—", "ratio": None,
            "target": "RSS < 96 MiB", "met": peak < 96, "vmhwm_mib": r["vmhwm_kib"] / 1024,
            "rss_start_mib": r["rss_start_kib"] / 1024, "mib_per_second": r["mib_per_second"],
        })
    for backend in ("fs", "s3"):
        small, large = j(f"rss_{backend}_small"), j(f"rss_{backend}_large")
        if small and large:
            grows = large["vmhwm_kib"] > small["vmhwm_kib"] * 1.10 + 4096
            rows.append({
                "scenario": f"rss_growth_{backend}",
                "label": f"VmHWM, {large['length'] / MIB:.0f} MiB files against "
                         f"{small['length'] / MIB:.0f} MiB files, {'file system' if backend == 'fs' else 'Garage (S3)'}",
                "value": large["vmhwm_kib"] / 1024, "unit": "MiB",
                "ceiling": small["vmhwm_kib"] / 1024, "ceiling_label": "VmHWM with the smaller files",
                "ratio": large["vmhwm_kib"] / small["vmhwm_kib"],
                "target": "no growth (≤ 1.10 × + 4 MiB)", "met": not grows,
            })
    med, nginx = load_wrk(results, "range_medialib"), load_wrk(results, "range_nginx")
    hls_med, hls_nginx = load_wrk(results, "hls_medialib"), load_wrk(results, "hls_nginx")
    segs = j("segments")
    # Issue 22: "HLS segment / MP4 Range GET ... nginx serving the same file ... ≥ 0.8".
    for scenario, label, m, n in (
        ("range_get", "Range GET of 1 MiB (random aligned offsets)", med, nginx),
        ("hls_segment_get", segs and (
            f"HLS segment GET, {segs['rendition']} ({len(segs['ranges'])} segments of "
            f"{min(r[1] for r in segs['ranges']) / 1024:,.0f}–"
            f"{max(r[1] for r in segs['ranges']) / 1024:,.0f} KiB, at random)"), hls_med, hls_nginx),
    ):
        if not m:
            continue
        ratio = m["rps"] / n["rps"] if n else None
        rows.append({
            "scenario": scenario, "label": label,
            "value": m["rps"], "unit": "req/s", "ceiling": n and n["rps"],
            "ceiling_label": "nginx (Debian), same file", "ratio": ratio, "target": "≥ 0.80",
            "met": None if ratio is None else ratio >= 0.8,
            "p50_ms": m["p50_ms"], "p99_ms": m["p99_ms"], "rps_runs": m["rps_runs"],
            "nginx": n,
        })

    commit, provenance_note = provenance()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    settings = json.load(open(os.path.join(results, "settings.json")))
    doc = {
        "date": now, "command": opts.get("--command", "").strip(), "commit": commit,
        "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()},
        "settings": settings, "scenarios": rows,
        "ceilings": {"dd": dd, "sink": sink_runs, "dd_mib_per_second": dd_mibs,
                     "sink_mib_per_second": sink_mibs, "upload_ceiling_mib_per_second": ceiling,
                     "nginx": nginx},
        "raw": {name: j(name) for name in ("upload_fs", "upload_s3", "garage_direct", "rss_fs_small",
                                           "rss_fs_large", "rss_s3_small", "rss_s3_large")},
        "range_medialib": med,
        "hls_medialib": hls_med, "hls_nginx": hls_nginx, "segments": segs,
    }
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    md = ["<!-- media -->", "## Media\n",
          "Measured by `bench/media.sh` (issue 19), a separate run from the table above: "
          "`bench/run.sh` regenerates the rest of this page and keeps this section as it is. "
          "The targets are ratios to ceilings measured in the same run on the same machine.\n",
          f"- **Date:** {now}; **command:** `{doc['command']}`; **commit:** `{commit}`"
          f"{provenance_note}",
          f"- **Machine:** {cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}; the client, "
          "the server, Garage, nginx and wrk share these CPUs",
          f"- **Upload:** one file of {settings['upload_mib']} MiB from /dev/urandom (in the page "
          f"cache), sent by `bench/media.py` in {settings['chunk_mib']} MiB PATCHes over one "
          "keep-alive connection (http.client); MiB/s from before the POST to the last 204. "
          "Ceiling: the slower of `dd if=FILE of=DIR/out bs=8M conv=fsync` into medialib's "
          "storage directory and the same driver against a bare HTTP sink (`media.py sink`), "
          "each the mean of a measurement before and after the medialib uploads.",
          f"- **RSS:** {settings['parallel']} uploads at once, each on its own fresh server; "
          "VmRSS sampled every 20 ms, VmHWM at the end.",
          f"- **Range GET:** a {settings['range_file_mib']} MiB file uploaded through tus, "
          f"`wrk -t{settings['threads']} -c{settings['range_connections']}` with "
          "`bench/wrk/range.lua` (`Range: bytes=N-(N+1 MiB-1)` at random MiB-aligned N, every "
          f"answer a 206), {settings['warmup']} s warm-up then {settings['reps']} × "
          f"{settings['duration']} s alternating medialib and nginx, the median run each; "
          "nginx 1.22 from Debian (nginx-light), 2 workers (= medialib's), `sendfile on`, "
          "access log off, serving medialib's storage directory.",
          f"- **HLS segment GET:** a {settings.get('hls_secs', '?')} s {settings.get('hls_size', '?')} "
          "clip with sound (ffmpeg's testsrc2) uploaded to the same server and processed by its "
          "worker; the segments of its highest rendition at random, each the byte range its "
          "playlist lists (`single_file` packaging, as a player asks for them), the same wrk "
          "settings and nginx, runs alternating with the Range GET's.\n",
          "| scenario | measured | ceiling | ratio | target | met? |",
          "|---|---:|---|---:|---|---|"]
    for r in rows:
        ceiling_text = "—" if r["ceiling"] is None else f"{fmt(r['ceiling'], 1)} ({r['ceiling_label']})"
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        measured = f"{fmt(r['value'], 1)} {r['unit']}"
        if r["scenario"].startswith("rss_fs") or r["scenario"].startswith("rss_s3"):
            measured = f"peak {r['value']:.1f} MiB (VmHWM {r['vmhwm_mib']:.1f})"
        md.append(f"| {r['label']} | {measured} | {ceiling_text} | {fmt(r['ratio'], 2)} | "
                  f"{r['target']} | {met} |")
    md.append("")
    md.append("Raw figures:\n")
    for name, d in (("dd before", dd[0]), ("dd after", dd[1]), ("sink before", sink_runs[0]),
                    ("sink after", sink_runs[1])):
        if d:
            md.append(f"- {name}: {d['mib_per_second']:.1f} MiB/s ({d['bytes'] / MIB:.0f} MiB in "
                      f"{d['seconds']:.2f} s)")
    direct = j("garage_direct")
    if direct:
        s3 = j("upload_s3")
        md.append(f"- Garage alone (part of the S3 upload's ceiling): the same bytes in "
                  f"{direct['chunk'] / MIB:.0f} MiB parts straight to its S3 API with boto3, one "
                  f"after the other: {direct['mib_per_second']:.1f} MiB/s"
                  + (f"; medialib's S3 upload is {s3['mib_per_second'] / direct['mib_per_second']:.2f} of that"
                     if s3 else ""))
    for name in ("upload_fs", "upload_s3", "rss_fs_small", "rss_fs_large", "rss_s3_small",
                 "rss_s3_large"):
        d = j(name)
        if d:
            extra = ""
            if "rss_peak_kib" in d:
                extra = (f"; server RSS {d['rss_start_kib'] / 1024:.1f} MiB before, peak "
                         f"{d['rss_peak_kib'] / 1024:.1f}, VmHWM {d['vmhwm_kib'] / 1024:.1f}")
            md.append(f"- {name}: {d['parallel']} × {d['length'] / MIB:.0f} MiB, "
                      f"{d['mib_per_second']:.1f} MiB/s in all ({d['seconds']:.2f} s){extra}")
    for name, w in (("Range GET, medialib", med), ("Range GET, nginx", nginx),
                    ("HLS segment GET, medialib", hls_med), ("HLS segment GET, nginx", hls_nginx)):
        if w:
            md.append(f"- {name}: {w['rps']:,.0f} req/s ({w['mib_per_second']:,.0f} "
                      f"MiB/s), p50 {w['p50_ms']:.2f} ms, p99 {w['p99_ms']:.1f} ms; runs "
                      f"{w['rps_runs']}"
                      + (f"; CPU per answer: server {w['server_cpu_us']:,.0f} µs, wrk "
                         f"{w['client_cpu_us']:,.0f} µs" if w.get("server_cpu_us") else ""))
    md.append("")
    analysis = ("<!-- media-analysis -->\n_No analysis written yet._\n"
                "<!-- /media-analysis -->")
    old = open(out_md).read() if os.path.exists(out_md) else ""
    a0, a1 = old.find("<!-- media-analysis -->"), old.find("<!-- /media-analysis -->")
    if 0 <= a0 < a1:
        analysis = old[a0 : a1 + len("<!-- /media-analysis -->")]
    md.append("### Media analysis\n")
    md.append(analysis)
    md.append("<!-- /media -->\n")
    section = "\n".join(md)
    s0, s1 = old.find("<!-- media -->"), old.find("<!-- /media -->")
    if 0 <= s0 < s1:
        new = old[:s0] + section + old[s1 + len("<!-- /media -->\n"):]
    elif "\n## Analysis\n" in old:
        i = old.index("\n## Analysis\n") + 1
        new = old[:i] + section + "\n" + old[i:]
    else:
        new = old + ("\n" if old else "") + section
    with open(out_md, "w") as f:
        f.write(new)
    print("| scenario | measured | ceiling | ratio | target | met? |")
    for line in md:
        if line.startswith("| ") and not line.startswith("| scenario"):
            print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        die("a mode: sink, upload, s3put, url, segments or report")
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "sink":
        sink(int(args[0]))
    elif mode == "upload":
        upload(args)
    elif mode == "s3put":
        s3put(args)
    elif mode == "url":
        url(*args)
    elif mode == "segments":
        segments(*args)
    elif mode == "report":
        report(args)
    else:
        die(f"unknown mode {mode!r}: sink, upload, s3put, url, segments or report")
