#!/usr/bin/env bash
# medialib's processing benchmark (issue 20). One command:
#
#   bench/pipeline.sh [--smoke]
#
# What it measures, each target a ratio to a ceiling measured in the same run:
#
# - Pipeline: a BENCH_PIPELINE_SECS (60) s 1920x1080 30 fps clip with sound (ffmpeg's
#   testsrc2 and a tone, encoded once by this script) uploaded through tus to medialib
#   (`workers = 1`, SQLite, the file system), which probes it and makes both renditions, the
#   HLS packaging, the stills and the sprite sheets. medialib's time is the worker's, from
#   its "processing started" to its "processing ended" log line (the source copied from
#   storage, every ffmpeg and ffprobe run, every file stored, the database written). Ceiling:
#   the same ffmpeg and ffprobe commands, taken from medialib's debug log of that run, run one
#   after the other by a plain shell script on a copy of the same file (bench/pipeline.py
#   replay). Target: medialib ≤ 1.15 × the script. The realtime factor (clip length over
#   medialib's time) is reported beside it.
# - Serving while processing: `wrk` on the clip's describe (BENCH_PIPELINE_CONNECTIONS (16)
#   connections, BENCH_DURATION (10) s) with nothing running, then again while the clip is
#   processed again (`action=reprocess`), its encode under way. Targets: requests a second
#   while processing ≥ 0.8 × idle, and its p99 latency ≤ 2 × idle (issue 22; ffmpeg runs at
#   nice 15, in the SCHED_IDLE class).
#
# --smoke: CI's check that this harness does not rot: a 4 s 640x360 clip, 2-second wrk runs,
# the debug build (BENCH_BINARY, if set, is used instead); the report goes to a temporary
# copy of docs/performance.md, never to docs/.
#
# Writes bench/results-pipeline.json and the "Processing" section of docs/performance.md.
#
# Environment: BENCH_PIPELINE_SECS, BENCH_PIPELINE_SIZE (1920x1080), BENCH_PIPELINE_CONNECTIONS,
# BENCH_DURATION, BENCH_THREADS (wrk threads, 2), BENCH_BINARY, CARGO_TARGET_DIR (default
# $HOME/.cache/medialib-target), MEDIALIB_BUILD_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bench=$root/bench
# shellcheck source=bench/lib.sh
. "$bench/lib.sh"

parse_smoke_argument "$@"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/medialib-target}
jobs=${MEDIALIB_BUILD_JOBS:-2}
if [ "$smoke" = 1 ]; then
    secs=${BENCH_PIPELINE_SECS:-4}
    size=${BENCH_PIPELINE_SIZE:-640x360}
    duration=${BENCH_DURATION:-2}
else
    secs=${BENCH_PIPELINE_SECS:-60}
    size=${BENCH_PIPELINE_SIZE:-1920x1080}
    duration=${BENCH_DURATION:-10}
fi
conns=${BENCH_PIPELINE_CONNECTIONS:-16}
threads=${BENCH_THREADS:-2}
redirect=http://127.0.0.1/callback

run_started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/medialib-pipeline.XXXXXX")
results=$work/results
mkdir -p "$results"
pids=()
trap cleanup EXIT
trap 'exit 130' INT TERM

step "tools"
command -v wrk >/dev/null || apt_install wrk wrk
command -v ffmpeg >/dev/null || apt_install ffmpeg ffmpeg
python=$(command -v python3)
echo "ffmpeg: $(ffmpeg -version | head -n 1 | cut -c1-40); wrk: $(wrk --version 2>&1 | head -n 1 | cut -c1-20)"

build_medialib

clip=$work/clip.mp4
make_clip "${secs}" "${size}" "$clip"

step "medialib serve with one worker"
start_medialib pipeline "file://$work/pipeline/media" MEDIALIB_WORKERS=1 \
    MEDIALIB_WORK_DIR="$work/pipeline/work" MEDIALIB_LOG_FORMAT=json \
    MEDIALIB_LOG=info,medialib_adapters_ffmpeg=debug MEDIALIB_JOB_LEASE=120
log=$server_dir/server.log

step "idle describe (wrk, ${duration} s, ${conns} connections)"
"$python" "$bench/media.py" upload "$base" "$token" "$lib" "$clip" "$results/upload.json" \
    --name clip.mp4
uuid=$(json_field "$results/upload.json" 'd["uploads"][0]["uuid"]')
"$python" "$bench/pipeline.py" wait "$base" "$token" "$lib" "$uuid" "$results/first.json"

wrk_describe() { # NAME
    BENCH_DIR=$bench BENCH_THREADS=$threads BENCH_BEARER=$token \
        wrk -t "$threads" -c "$conns" -d "${duration}s" -s "$bench/wrk/get.lua" \
        "$base/api/describe/c/$lib/o/$uuid/" | tee "$work/wrk_$1.out" |
        sed -n 's/^BENCH_JSON //p' >"$results/$1.json"
    cat "$results/$1.json"
}
# A warm-up (not reported): the first seconds of wrk against a fresh server are slower.
(duration=2 && wrk_describe describe_warmup >/dev/null)
wrk_describe describe_idle

step "describe while the clip is processed again"
"$python" "$bench/pipeline.py" reprocess "$base" "$token" "$lib" "$uuid"
"$python" "$bench/pipeline.py" wait-state "$base" "$token" "$lib" "$uuid" processing \
    "$results/busy_seen.json"
wrk_describe describe_busy
"$python" "$bench/pipeline.py" wait "$base" "$token" "$lib" "$uuid" "$results/second.json"

step "the same ffmpeg and ffprobe commands by a plain shell script"
"$python" "$bench/pipeline.py" replay "$log" "$uuid" "$clip" "$work/replay" "$results/replay.json"

stop_medialib

step "report"
if [ "$smoke" = 1 ]; then
    cp "$root/docs/performance.md" "$work/performance.md"
    page=$work/performance.md
    out=$work/results-pipeline.json
else
    page=$root/docs/performance.md
    out=$bench/results-pipeline.json
fi
"$python" "$bench/pipeline.py" report "$results" "$secs" "$size" "$out" "$page"
