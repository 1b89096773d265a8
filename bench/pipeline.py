"""The processing benchmark's helpers (bench/pipeline.sh; standard library only).

Usage:
  pipeline.py wait BASE TOKEN LIBRARY UUID OUT
      Polls the media call until the media is ready (exit 1 when it failed, or after 30 min);
      writes OUT: the seconds waited and the last media record.
  pipeline.py wait-state BASE TOKEN LIBRARY UUID STATE OUT
      Polls until the media is in STATE (and, for `processing`, past 5 %: encoding runs);
      writes OUT {"seen": true}, or {"seen": false} when the media turned ready first (a short
      clip processed between two polls).
  pipeline.py reprocess BASE TOKEN LIBRARY UUID
      POST action=reprocess (expects 202).
  pipeline.py replay LOG UUID SOURCE DIR OUT
      Reads medialib's JSON log: the first "processing started" … "processing ended" of UUID
      (the worker's own time) and every ffprobe and ffmpeg command the worker ran between them
      (its debug lines "running ffprobe" / "running ffmpeg"); writes them as a plain shell
      script into DIR, with the worker's work directory replaced by DIR and the source copied
      there, runs it with bash and times it; writes OUT.
  pipeline.py report RESULTS SECS SIZE OUT PAGE
      Computes the ratios, writes OUT (JSON) and the "Processing" section of PAGE.
"""

import datetime
import http.client
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.parse


def die(message):
    print(f"pipeline.py: {message}", file=sys.stderr)
    sys.exit(1)


def call(base, token, method, path, body=None):
    u = urllib.parse.urlparse(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def media(base, token, library, uuid):
    status, data = call(base, token, "GET", f"/api/media/c/{library}/o/{uuid}/")
    if status != 200:
        die(f"media call: {status} {data[:300]!r}")
    return json.loads(data)


def wait(argv):
    base, token, library, uuid, out = argv
    started = time.monotonic()
    while True:
        m = media(base, token, library, uuid)
        if m["state"] == "ready":
            break
        if m["state"] == "failed":
            die(f"processing failed: {m['error']}")
        if time.monotonic() - started > 1800:
            die(f"not ready after 30 minutes: {m}")
        time.sleep(0.2)
    seconds = time.monotonic() - started
    json.dump({"seconds": seconds, "media": m}, open(out, "w"), indent=1)
    print(f"ready after {seconds:.1f} s ({len(m['files'])} files)")


def wait_state(argv):
    base, token, library, uuid, state, out = argv
    started = time.monotonic()
    while True:
        m = media(base, token, library, uuid)
        if m["state"] == state and (state != "processing" or m["progress"] > 5):
            print(f"{state} at {m['progress']} %")
            json.dump({"seen": True}, open(out, "w"))
            return
        if m["state"] == "ready" and state != "ready" and time.monotonic() - started > 1:
            print(f"ready before it was seen {state}: the clip is too short to measure during")
            json.dump({"seen": False}, open(out, "w"))
            return
        if m["state"] == "failed" or time.monotonic() - started > 600:
            die(f"never {state}: {m}")
        time.sleep(0.05)


def reprocess(argv):
    base, token, library, uuid = argv
    status, data = call(
        base, token, "POST", f"/api/media/c/{library}/o/{uuid}/", "action=reprocess"
    )
    if status != 202:
        die(f"reprocess: {status} {data[:300]!r}")


QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def unescape(text):
    """Rust's Debug escapes of a string (the ones a path or an ffmpeg argument can hold)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def parse_command(debug):
    """A std::process::Command's Debug text: `cd "DIR" && "prog" "arg" …` (the `cd` part
    only when a directory was set) → (dir or None, argv)."""
    cwd = None
    if debug.startswith("cd "):
        first, debug = debug.split(" && ", 1)
        cwd = unescape(QUOTED.search(first).group(1))
    return cwd, [unescape(m.group(1)) for m in QUOTED.finditer(debug)]


def when(line):
    return datetime.datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))


def replay(argv):
    log, uuid, source, directory, out = argv
    started = ended = None
    commands = []
    for raw in open(log):
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        # medialib's JSON lines carry the event's fields at the top level.
        fields = line.get("fields", line)
        message = fields.get("message", "")
        if message == "processing started" and fields.get("object") == uuid and not started:
            started = when(line)
        elif started and not ended and message in ("running ffmpeg", "running ffprobe"):
            commands.append(parse_command(fields["command"]))
        elif message == "processing ended" and fields.get("object") == uuid and started:
            ended = when(line)
            break
    if not (started and ended and commands):
        die(f"no processing of {uuid} with commands in {log}")
    # The worker's work directory: where the first ffmpeg ran.
    work = next(cwd for cwd, _ in commands if cwd)
    os.makedirs(directory, exist_ok=True)
    shutil.copyfile(source, os.path.join(directory, "source"))
    # The worker makes the output's directories before a tool runs (mp4/, hls/, …).
    outputs = {
        os.path.dirname(a)
        for _, args in commands
        for a in args
        if re.fullmatch(r"[A-Za-z0-9_]+(/[A-Za-z0-9_.%-]+)+", a)
    }
    script = ["set -e", f"cd {shlex.quote(directory)}"]
    script += [f"mkdir -p {shlex.quote(d)}" for d in sorted(outputs)]
    for cwd, args in commands:
        args = [a.replace(work, directory) for a in args]
        line = " ".join(shlex.quote(a) for a in args) + " >/dev/null"
        if cwd:
            line = f"(cd {shlex.quote(cwd.replace(work, directory))} && {line})"
        script.append(line)
    path = os.path.join(directory, "..", "replay.sh")
    open(path, "w").write("\n".join(script) + "\n")
    # The file must come from the page cache in both runs, as it does for the worker.
    subprocess.run(["cat", os.path.join(directory, "source")], stdout=subprocess.DEVNULL, check=True)
    t0 = time.monotonic()
    subprocess.run(["bash", path], check=True)
    script_seconds = time.monotonic() - t0
    medialib_seconds = (ended - started).total_seconds()
    doc = {
        "commands": len(commands),
        "script_seconds": script_seconds,
        "medialib_seconds": medialib_seconds,
        "script": script,
    }
    json.dump(doc, open(out, "w"), indent=1)
    for cwd, args in commands:
        print("  " + " ".join(a for a in args[:3]) + " … " + " ".join(args[-1:]))
    print(
        f"{len(commands)} commands: medialib {medialib_seconds:.3f} s, "
        f"the script {script_seconds:.3f} s, ratio {medialib_seconds / script_seconds:.4f}"
    )


def report(argv):
    results, secs, size, out, page = argv
    secs = float(secs)
    load = lambda name: json.load(open(os.path.join(results, name)))  # noqa: E731
    r = load("replay.json")
    idle, busy = load("describe_idle.json"), load("describe_busy.json")
    first = load("first.json")
    seen = load("busy_seen.json")["seen"]
    doc = {
        "clip": {"seconds": secs, "size": size},
        "pipeline": {
            "medialib_seconds": round(r["medialib_seconds"], 3),
            "script_seconds": round(r["script_seconds"], 3),
            "ratio": round(r["medialib_seconds"] / r["script_seconds"], 3),
            "target_at_most": 1.15,
            "realtime_factor": round(secs / r["medialib_seconds"], 2),
            "upload_to_ready_seconds": round(first["seconds"], 2),
            "commands": r["commands"],
            "files": len(first["media"]["files"]),
        },
        "describe": {
            "idle_rps": round(idle["rps"], 1),
            "busy_rps": round(busy["rps"], 1),
            "ratio": round(busy["rps"] / idle["rps"], 3),
            "target_at_least": 0.8,
            "idle_p99_ms": round(idle["p99_us"] / 1000, 2),
            "busy_p99_ms": round(busy["p99_us"] / 1000, 2),
            "p99_ratio": round(busy["p99_us"] / idle["p99_us"], 2) if idle["p99_us"] else None,
            # Issue 22: "describe p99 while a transcode runs ... ≤ 2×" the idle p99.
            "p99_target_at_most": 2.0,
            "non2xx": idle["non2xx"] + busy["non2xx"],
            "measured_while_processing": seen,
        },
    }
    json.dump(doc, open(out, "w"), indent=1)
    p, d = doc["pipeline"], doc["describe"]
    ok = lambda good: "met" if good else "**missed**"  # noqa: E731
    section = f"""<!-- processing -->
## Processing

Measured by `bench/pipeline.sh` ({datetime.date.today().isoformat()}): a {secs:.0f} s {size}
30 fps clip with sound, processed by medialib's worker (both renditions, HLS, stills, sprites),
beside the same {p['commands']} ffmpeg and ffprobe commands run by a plain shell script on the
same file; then `describe` under wrk, idle and while the clip is processed again.

| Measure | Value | Target |
|---|---|---|
| Pipeline, medialib (worker's time) | {p['medialib_seconds']} s | |
| Pipeline, the same commands by a shell script | {p['script_seconds']} s | |
| Ratio medialib / script | {p['ratio']} | ≤ 1.15, {ok(p['ratio'] <= 1.15)} |
| Realtime factor (clip length / medialib's time) | {p['realtime_factor']} × | |
| Upload finished → `ready` (media call polled) | {p['upload_to_ready_seconds']} s | |
| describe, req/s idle → while processing | {d['idle_rps']} → {d['busy_rps']} | ≥ 0.8 ×, {ok(d['ratio'] >= 0.8) if seen else "not measured (processing ended first)"} ({d['ratio']}) |
| describe, p99 idle → while processing | {d['idle_p99_ms']} ms → {d['busy_p99_ms']} ms | ≤ 2 ×, {(ok(d['p99_ratio'] is not None and d['p99_ratio'] <= 2.0) if seen else "not measured (processing ended first)")} ({d['p99_ratio']}) |

The clip is ffmpeg's synthetic `testsrc2`, which x264 encodes faster than camera footage: the
realtime factor is an upper bound, the ratio (same commands, same file) is what the target is
about. Why the tools run in the `SCHED_IDLE` class: docs/decisions.md ("Processing in
practice").
<!-- /processing -->
"""
    text = open(page).read()
    start, end = text.find("<!-- processing -->"), text.find("<!-- /processing -->")
    if start >= 0 and end > start:
        text = text[:start] + section + text[end + len("<!-- /processing -->\n") :]
    elif "<!-- analysis -->" in text:
        at = text.find("<!-- analysis -->")
        text = text[:at] + section + "\n" + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(page, "w").write(text)
    print(json.dumps(doc, indent=1))
    if d["non2xx"]:
        die(f"describe answered {d['non2xx']} non-2xx responses")


def main():
    if len(sys.argv) < 2:
        die(__doc__)
    command, argv = sys.argv[1], sys.argv[2:]
    {
        "wait": wait,
        "wait-state": wait_state,
        "reprocess": reprocess,
        "replay": replay,
        "report": report,
    }.get(command, lambda _: die(__doc__))(argv)


if __name__ == "__main__":
    main()
