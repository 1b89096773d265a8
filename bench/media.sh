#!/usr/bin/env bash
# medialib's media benchmarks (issue 19). One command:
#
#   bench/media.sh [--smoke]
#
# A script of its own beside bench/run.sh, not scenarios in it: run.sh loops over database
# backends and measures everything with wrk at fixed connections, while these need a
# generated gigabyte, a Garage, an nginx, a Python tus client and fresh servers per
# measurement, none of which depends on the database. The two share the harness's ways: the
# ceilings in the same run, wrk with bench/wrk/common.lua's BENCH_JSON line, a `--smoke` for
# CI, and one section of docs/performance.md (bench/report.py keeps it when it rewrites the
# page; bench/media.py writes it).
#
# What it measures, each target a ratio to a ceiling measured in the same run:
#
# - Upload: one file of BENCH_MEDIA_UPLOAD_MIB (1024) MiB from /dev/urandom sent through tus
#   in BENCH_MEDIA_CHUNK_MIB (8) MiB PATCHes over one keep-alive connection (bench/media.py
#   upload), to medialib with `storage_url = file://…`, then `s3://…` on a single-node Garage
#   this script starts. Ceiling: the slower of `dd if=FILE of=DIR/out bs=8M conv=fsync` into
#   the directory medialib stores into and the same client against a bare HTTP sink
#   (bench/media.py sink); each measured before and after the medialib uploads, their mean.
#   Target ≥ 0.7. On Garage the ceiling also counts Garage's own rate (the same bytes in the
#   same part size straight to its S3 API with boto3, when installed): medialib cannot take
#   bytes faster than the store behind it, and Garage here is slower than the disk; the
#   ratio to the disk-and-loopback ceiling alone is reported beside it (docs/decisions.md).
# - RSS: BENCH_MEDIA_PARALLEL (8) such uploads at once, of BENCH_MEDIA_RSS_SMALL_MIB (256) MiB
#   and then of BENCH_MEDIA_RSS_LARGE_MIB (1024) MiB, each set on a fresh server, file system
#   and Garage; VmRSS sampled every 20 ms, VmHWM at the end. Target: < 96 MiB, and VmHWM not
#   larger with the larger files ("memory does not grow with file size").
# - Range GET: a BENCH_MEDIA_RANGE_MIB (64) MiB file uploaded through tus, its delivery URL
#   from the media call (`files[0].url`); wrk with bench/wrk/range.lua (1 MiB at random
#   MiB-aligned offsets) against medialib and against Debian's nginx serving the same file
#   from medialib's storage directory, runs alternating. Target ≥ 0.8 of nginx's req/s
#   (issue 22).
# - HLS segment GET: a BENCH_MEDIA_HLS_SECS (24) s BENCH_MEDIA_HLS_SIZE (1280x720) clip with
#   sound (ffmpeg's testsrc2, encoded once, not measured) uploaded to the same server and
#   processed by its worker; the segments of its highest rendition, as its playlist lists
#   them (bench/media.py segments), fetched at random by wrk with bench/wrk/range.lua, from
#   medialib and from the same nginx serving the stored file. Target ≥ 0.8 (issue 22).
#
# Both sides of every ratio run on the same 2 CPUs, in the same minutes: a build or another
# benchmark running at the same time slows both, so the ratios cancel most of it (the
# absolute figures do not). Every step prints the time elapsed.
#
# Writes bench/results-media.json and the "Media" section of docs/performance.md.
#
# --smoke: CI's check that this harness does not rot: a 16 MiB upload, 8 × 2 and 8 × 4 MiB,
# a 4 MiB file and a 4 s 640x360 clip for 1-second wrk runs; the debug build (BENCH_BINARY,
# if set, is the binary used instead); Garage only when its binary is installed; the report
# goes to a temporary copy of docs/performance.md, never to docs/.
#
# Environment: BENCH_MEDIA_UPLOAD_MIB, BENCH_MEDIA_CHUNK_MIB, BENCH_MEDIA_PARALLEL,
# BENCH_MEDIA_RSS_SMALL_MIB, BENCH_MEDIA_RSS_LARGE_MIB, BENCH_MEDIA_RANGE_MIB,
# BENCH_MEDIA_HLS_SECS, BENCH_MEDIA_HLS_SIZE (above);
# BENCH_MEDIA_RANGE_CONNECTIONS (wrk connections, 16), BENCH_THREADS (wrk threads, 2),
# BENCH_DURATION (s, 5), BENCH_WARMUP (s, 2), BENCH_REPS (3); BENCH_PERF (a directory: a
# system-wide profile of each measured Range GET run, split by bench/perf_split.py, as in
# bench/run.sh); BENCH_MEDIA_S3 (`auto`: with
# Garage when its binary is found; `0`; `1`: fail without it); MEDIALIB_GARAGE (the garage
# binary, else `garage` on the PATH, else ~/.cargo/bin/garage: `cargo install garage@2.5.0
# --locked`); BENCH_BINARY; CARGO_TARGET_DIR (default $HOME/.cache/medialib-target),
# MEDIALIB_BUILD_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bench=$root/bench
# step, stop_pid, cleanup, apt_install, free_port, wait_http, make_clip, json_field, start_medialib.
# shellcheck source=bench/lib.sh
. "$bench/lib.sh"

parse_smoke_argument "$@"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/medialib-target}
jobs=${MEDIALIB_BUILD_JOBS:-2}
if [ "$smoke" = 1 ]; then
    upload_mib=${BENCH_MEDIA_UPLOAD_MIB:-16}
    rss_small_mib=${BENCH_MEDIA_RSS_SMALL_MIB:-2}
    rss_large_mib=${BENCH_MEDIA_RSS_LARGE_MIB:-4}
    range_mib=${BENCH_MEDIA_RANGE_MIB:-4}
    hls_secs=${BENCH_MEDIA_HLS_SECS:-4}
    hls_size=${BENCH_MEDIA_HLS_SIZE:-640x360}
    duration=${BENCH_DURATION:-1}
    warmup=${BENCH_WARMUP:-1}
    reps=${BENCH_REPS:-1}
else
    upload_mib=${BENCH_MEDIA_UPLOAD_MIB:-1024}
    rss_small_mib=${BENCH_MEDIA_RSS_SMALL_MIB:-256}
    rss_large_mib=${BENCH_MEDIA_RSS_LARGE_MIB:-1024}
    range_mib=${BENCH_MEDIA_RANGE_MIB:-64}
    hls_secs=${BENCH_MEDIA_HLS_SECS:-24}
    hls_size=${BENCH_MEDIA_HLS_SIZE:-1280x720}
    duration=${BENCH_DURATION:-5}
    warmup=${BENCH_WARMUP:-2}
    reps=${BENCH_REPS:-3}
fi
chunk_mib=${BENCH_MEDIA_CHUNK_MIB:-8}
parallel=${BENCH_MEDIA_PARALLEL:-8}
range_conns=${BENCH_MEDIA_RANGE_CONNECTIONS:-16}
threads=${BENCH_THREADS:-2}
want_s3=${BENCH_MEDIA_S3:-auto}
MIB=1048576
redirect=http://127.0.0.1/callback

run_started=$(date +%s)

work=$(mktemp -d "${TMPDIR:-/tmp}/medialib-media.XXXXXX")
results=$work/results
mkdir -p "$results"
pids=()

trap cleanup EXIT
trap 'exit 130' INT TERM

step "tools"
command -v wrk >/dev/null || apt_install wrk wrk
command -v ffmpeg >/dev/null || apt_install ffmpeg ffmpeg
# Debian's postinst starts nginx as a service where it can (not in a container without an
# init); this script runs its own nginx on a free port either way.
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { apt_install nginx-light nginx && nginx=/usr/sbin/nginx; }
python=$(command -v python3)
garage=
if [ "$want_s3" != 0 ]; then
    for candidate in "${MEDIALIB_GARAGE:-}" "$(command -v garage || true)" "$HOME/.cargo/bin/garage"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            garage=$candidate
            break
        fi
    done
    if [ -z "$garage" ]; then
        if [ "$want_s3" = 1 ]; then
            echo "Garage is missing: cargo install garage@2.5.0 --locked (or set MEDIALIB_GARAGE)" >&2
            exit 1
        fi
        echo "Garage not found: the S3 measurements are skipped (BENCH_MEDIA_S3=1 makes this fail)"
    fi
fi
echo "wrk: $(wrk --version 2>&1 | head -n 1 | cut -c1-40); $("$nginx" -v 2>&1);" \
    "python: $($python --version); garage: ${garage:-none}"

build_medialib


# The file every upload sends (or the first --length bytes of): random, so that nothing on
# the way can compress it, and in the page cache, as it would be for a client sending it.
step "a ${upload_mib} MiB file from /dev/urandom"
source_file=$work/upload.bin
head -c $((upload_mib * MIB)) /dev/urandom >"$source_file"
# Its write-back must not land inside the first measurement.
sync
ls -l "$source_file"
for n in "$rss_small_mib" "$rss_large_mib" "$range_mib"; do
    [ "$n" -le "$upload_mib" ] || {
        echo "every size must be at most BENCH_MEDIA_UPLOAD_MIB ($upload_mib MiB): $n" >&2
        exit 2
    }
done

clip=$work/clip.mp4
make_clip "${hls_secs}" "${hls_size}" "$clip"

# medialib's storage directories live in $work, on the same file system as dd's output.
ceilings() { # SUFFIX (before|after)
    step "ceiling: dd bs=8M conv=fsync into the storage file system ($1)"
    local out dd_out
    out=$work/dd.out
    dd_out=$(dd if="$source_file" of="$out" bs=8M conv=fsync 2>&1)
    rm -f "$out"
    printf '%s\n' "$dd_out" | tail -n 1
    "$python" - "$dd_out" "$results/dd_$1.json" <<'PY'
import json, re, sys
m = re.search(r"^(\d+) bytes .* copied, ([0-9.]+) s", sys.argv[1], re.M)
if not m:
    sys.exit(f"dd printed no result: {sys.argv[1]!r}")
b, s = int(m.group(1)), float(m.group(2))
json.dump({"bytes": b, "seconds": s, "mib_per_second": b / 1048576 / s}, open(sys.argv[2], "w"))
print(f"dd: {b / 1048576 / s:.1f} MiB/s")
PY
    step "ceiling: the same client against a bare HTTP sink ($1)"
    local port pid
    port=$(free_port)
    "$python" "$bench/media.py" sink "$port" >"$work/sink.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_http "http://127.0.0.1:$port/" "$pid"
    "$python" "$bench/media.py" upload "http://127.0.0.1:$port" - - "$source_file" \
        "$results/sink_$1.json" --chunk $((chunk_mib * MIB))
    stop_pid "$pid"
}


garage_pid=
garage_env=()
start_garage() {
    local dir=$work/garage api rpc
    mkdir -p "$dir"
    api=$(free_port)
    rpc=$(free_port)
    cat >"$dir/garage.toml" <<EOF
metadata_dir = "$dir/meta"
data_dir = "$dir/data"
db_engine = "sqlite"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:$rpc"
rpc_public_addr = "127.0.0.1:$rpc"
rpc_secret = "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:$api"
EOF
    local key secret
    key=GK$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    GARAGE_DEFAULT_ACCESS_KEY=$key GARAGE_DEFAULT_SECRET_KEY=$secret GARAGE_DEFAULT_BUCKET=media \
        RUST_LOG=garage=warn "$garage" -c "$dir/garage.toml" server --single-node --default-bucket \
        >"$work/garage.log" 2>&1 &
    garage_pid=$!
    pids+=("$garage_pid")
    wait_http "http://127.0.0.1:$api/" "$garage_pid"
    garage_env=(MEDIALIB_STORAGE_S3_ENDPOINT="http://127.0.0.1:$api" MEDIALIB_STORAGE_S3_REGION=garage
        MEDIALIB_STORAGE_S3_ACCESS_KEY_ID="$key" MEDIALIB_STORAGE_S3_SECRET_ACCESS_KEY="$secret")
    echo "garage on 127.0.0.1:$api (pid $garage_pid)"
}
# Deletes what the last storage-backed server left in the bucket: each S3 server has its own
# prefix, and Garage keeps its data in $work, so stopping is enough for disk; the gigabytes
# are dropped by deleting its data directory between measurements instead.
reset_garage() {
    [ -n "$garage_pid" ] || return 0
    stop_pid "$garage_pid"
    rm -rf "$work/garage"
    start_garage
}

upload_to() { # OUT [media.py upload options ...] (uses base, token, lib)
    local out=$1
    shift
    "$python" "$bench/media.py" upload "$base" "$token" "$lib" "$source_file" "$results/$out.json" \
        --chunk $((chunk_mib * MIB)) "$@"
}

ceilings before

step "medialib, file system: one ${upload_mib} MiB upload in ${chunk_mib} MiB PATCHes"
start_medialib fs "file://$work/fs/media"
upload_to upload_fs --rss-pid "$server_pid"
stop_medialib

if [ -n "$garage" ]; then
    step "medialib, Garage (S3): one ${upload_mib} MiB upload in ${chunk_mib} MiB PATCHes"
    start_garage
    start_medialib s3 "s3://media/bench" "${garage_env[@]}"
    upload_to upload_s3 --rss-pid "$server_pid"
    stop_medialib
    # Garage's own rate, part of the S3 upload's ceiling: the same bytes straight to its S3 API.
    if "$python" -c 'import boto3' 2>/dev/null; then
        "$python" "$bench/media.py" s3put "${garage_env[0]#*=}" "${garage_env[2]#*=}" \
            "${garage_env[3]#*=}" media "$source_file" "$results/garage_direct.json" \
            --chunk $((chunk_mib * MIB))
    else
        echo "boto3 is not installed: Garage's own rate is not measured (the S3 ceiling is the machine's alone)"
    fi
    reset_garage
fi

ceilings after

for size in "$rss_small_mib" "$rss_large_mib"; do
    kind=small
    [ "$size" = "$rss_large_mib" ] && kind=large
    step "RSS, file system: $parallel uploads of $size MiB at once, on a fresh server"
    start_medialib "rss-fs-$kind" "file://$work/rss-fs-$kind/media"
    upload_to "rss_fs_$kind" --rss-pid "$server_pid" --parallel "$parallel" --length $((size * MIB))
    stop_medialib
    if [ -n "$garage" ]; then
        step "RSS, Garage (S3): $parallel uploads of $size MiB at once, on a fresh server"
        start_medialib "rss-s3-$kind" "s3://media/rss-$kind" "${garage_env[@]}"
        upload_to "rss_s3_$kind" --rss-pid "$server_pid" --parallel "$parallel" --length $((size * MIB))
        stop_medialib
        reset_garage
    fi
done

step "Range and HLS segment GETs: a ${range_mib} MiB file and the clip, medialib against nginx"
start_medialib range "file://$work/range/media"
upload_to range_upload --length $((range_mib * MIB)) --name range.bin
uuid=$(json_field "$results/range_upload.json" 'd["uploads"][0]["uuid"]')
media_path=$("$python" "$bench/media.py" url "$base" "$token" "$lib" "$uuid")
# stored_file NAME_PATTERN: the one file under the server's storage with that path ending.
stored_file() {
    local found
    found=$(find "$work/range/media" -path '*staging~*' -prune -o -type f -path "$1" -print)
    [ "$(printf '%s\n' "$found" | wc -l)" = 1 ] && [ -f "$found" ] || {
        echo "expected one stored $1 under $work/range/media, found: $found" >&2
        exit 1
    }
    printf '%s\n' "$found"
}
stored=$(stored_file '*/source*')
relative=${stored#"$work"}
"$python" "$bench/media.py" upload "$base" "$token" "$lib" "$clip" "$results/clip_upload.json" \
    --name clip.mp4
clip_uuid=$(json_field "$results/clip_upload.json" 'd["uploads"][0]["uuid"]')
# Waits for the worker: nothing is measured while it processes.
"$python" "$bench/pipeline.py" wait "$base" "$token" "$lib" "$clip_uuid" "$results/clip_ready.json"
"$python" "$bench/media.py" segments "$base" "$results/clip_ready.json" "$results/segments.json"
hls_path=$(json_field "$results/segments.json" 'd["path"]')
hls_stored=$(stored_file "*/$(json_field "$results/segments.json" 'd["stored_suffix"]')")
hls_relative=${hls_stored#"$work"}
hls_ranges=$(json_field "$results/segments.json" '",".join(f"{o}+{n}" for o, n in d["ranges"])')
nginx_port=$(free_port)
mkdir -p "$work/nginx"
# Debian's nginx.conf, reduced to what serving one static file uses: its worker count is
# `auto` (one per CPU, as medialib's actix workers), sendfile and tcp_nopush on; access log
# off, as medialib logs at `warn` here.
# Run as root, nginx would hand its workers to `nobody`, who cannot read $work (0700).
user_line=
[ "$(id -u)" = 0 ] && user_line="user $(id -un) $(id -gn);"
cat >"$work/nginx/nginx.conf" <<EOF
$user_line
daemon off;
master_process on;
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        root $work;
    }
}
EOF
"$nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" >"$work/nginx.log" 2>&1 &
nginx_pid=$!
pids+=("$nginx_pid")
wait_http "http://127.0.0.1:$nginx_port/" "$nginx_pid"
medialib_url=$base$media_path
nginx_url=http://127.0.0.1:$nginx_port$relative
# Both answer the same bytes for the same range.
for u in "$medialib_url" "$nginx_url"; do
    got=$(curl -s -o - -w '\n%{http_code}' -r $((MIB * 3))-$((MIB * 4 - 1)) "$u" | tail -n 1)
    [ "$got" = 206 ] || {
        echo "$u: a Range GET answered $got, not 206" >&2
        exit 1
    }
done
a=$(curl -s -r $((MIB * 3))-$((MIB * 4 - 1)) "$medialib_url" | sha256sum)
b=$(curl -s -r $((MIB * 3))-$((MIB * 4 - 1)) "$nginx_url" | sha256sum)
c=$(dd if="$source_file" bs=1M skip=3 count=1 status=none | sha256sum)
[ "$a" = "$b" ] && [ "$a" = "$c" ] || {
    echo "medialib and nginx answer different bytes for the same range" >&2
    exit 1
}
medialib_hls=$base$hls_path
nginx_hls=http://127.0.0.1:$nginx_port$hls_relative
first=$(json_field "$results/segments.json" '"%d-%d" % (d["ranges"][0][0], sum(d["ranges"][0]) - 1)')
for u in "$medialib_hls" "$nginx_hls"; do
    got=$(curl -s -o /dev/null -w '%{http_code}' -H "Range: bytes=$first" "$u")
    [ "$got" = 206 ] || {
        echo "$u: an HLS segment's GET answered $got, not 206" >&2
        exit 1
    }
done
[ "$(curl -s -H "Range: bytes=$first" "$medialib_hls" | sha256sum)" = \
    "$(curl -s -H "Range: bytes=$first" "$nginx_hls" | sha256sum)" ] || {
    echo "medialib and nginx answer different bytes for the same HLS segment" >&2
    exit 1
}
echo "medialib: $medialib_url, $medialib_hls"
echo "nginx:    $nginx_url, $nginx_hls"

# wrk_range NAME URL RUN SERVER_PID [RANGES]: also the CPU the server (with its worker
# processes) and wrk spent on the run, from /proc and `times`. RANGES: bench/wrk/range.lua's
# BENCH_RANGES (empty: 1 MiB blocks of the range file).
wrk_range() {
    local name=$1 url=$2 run=$3 server=$4 ranges=${5:-} d=$duration line cpu0 cpu1
    [ "$run" = 0 ] && d=$warmup
    cpu0=$(tree_ticks "$server")
    if [ "$run" != 0 ]; then perf_start "$name.$run" "$d"; fi
    line=$({
        env BENCH_DIR="$bench" BENCH_THREADS="$threads" BENCH_RANGE_BLOCKS="$range_mib" \
            BENCH_RANGES="$ranges" BENCH_CONNECTIONS="$range_conns" \
            wrk -t "$threads" -c "$range_conns" -d "${d}s" --timeout 10s --latency \
            -s "$bench/wrk/range.lua" "$url"
        times >"$work/times"
    } | tee -a "$work/wrk.log" | sed -n 's/^BENCH_JSON //p')
    cpu1=$(tree_ticks "$server")
    [ -n "$line" ] || {
        echo "$name: wrk printed no result" >&2
        return 1
    }
    local labels=("--label=$server=server") pid
    for pid in $(pgrep -P "$server" || true); do labels+=("--label=$pid=server"); done
    perf_split "$name.$run" "$line" "$((d - 2))" "${labels[@]}"
    "$python" - "$line" "$run" "$range_conns" "$results/$name.jsonl" "$name" \
        "$((cpu1 - cpu0))" "$clk_tck" "$(children_seconds "$work/times")" <<'PY'
import json, sys
r = json.loads(sys.argv[1]) | {"run": int(sys.argv[2]), "connections": int(sys.argv[3])}
r |= {"server_cpu_s": int(sys.argv[6]) / int(sys.argv[7]),
      "client_cpu_s": float(sys.argv[8] or 0)}
kind = "warm-up" if r["run"] == 0 else f"run {r['run']}"
mibs = r["bytes"] / 1048576 / (r["duration_us"] / 1e6)
print(f"{sys.argv[5]:16} {kind:8} {r['rps']:9.1f} req/s {mibs:8.1f} MiB/s  "
      f"p50 {r['p50_us'] / 1000:7.2f} ms  p99 {r['p99_us'] / 1000:7.2f} ms")
if r["non2xx"] or r["socket_errors"]:
    sys.exit(f"{sys.argv[5]}: {r['non2xx']} unexpected answers, {r['socket_errors']} socket "
             f"errors ({r['sample']})")
if r["requests"] == 0:
    sys.exit(f"{sys.argv[5]}: no request completed")
with open(sys.argv[4], "a") as f:
    f.write(json.dumps(r) + "\n")
PY
}
for run in $(seq 0 "$reps"); do
    sleep 0.5
    wrk_range range_nginx "$nginx_url" "$run" "$nginx_pid"
    sleep 0.5
    wrk_range range_medialib "$medialib_url" "$run" "$server_pid"
    sleep 0.5
    wrk_range hls_nginx "$nginx_hls" "$run" "$nginx_pid" "$hls_ranges"
    sleep 0.5
    wrk_range hls_medialib "$medialib_hls" "$run" "$server_pid" "$hls_ranges"
done
stop_pid "$nginx_pid"
stop_medialib

step "report"
cat >"$results/settings.json" <<EOF
{"upload_mib": $upload_mib, "chunk_mib": $chunk_mib, "parallel": $parallel,
 "rss_small_mib": $rss_small_mib, "rss_large_mib": $rss_large_mib, "range_file_mib": $range_mib,
 "range_connections": $range_conns, "threads": $threads, "duration": $duration,
 "hls_secs": $hls_secs, "hls_size": "$hls_size",
 "warmup": $warmup, "reps": $reps, "profile": "$profile", "garage": "${garage:-}",
 "smoke": $smoke}
EOF
if [ "$smoke" = 1 ]; then
    out_json=$work/results-media.json
    out_md=$work/performance.md
    cp "$root/docs/performance.md" "$out_md"
else
    out_json=$bench/results-media.json
    out_md=$root/docs/performance.md
fi
"$python" "$bench/media.py" report "$results" "$out_json" "$out_md" --command "bench/media.sh $*"
if [ "$smoke" = 1 ]; then
    grep -q '^## Media' "$out_md" || {
        echo "the report did not write its section" >&2
        exit 1
    }
    echo "smoke passed (report not kept: $out_md)"
else
    echo "wrote $out_json and $out_md"
fi
t=$(($(date +%s) - run_started))
printf 'bench/media.sh %s: %d:%02d in all\n' "$*" $((t / 60)) $((t % 60))
