#!/usr/bin/env bash
# medialib's benchmark harness (issue 7). One command:
#
#   bench/run.sh [sqlite|postgres|all] [--smoke]       (default: all)
#
# Builds medialib and bench/hello (the ceilings) in one release build, then for each backend:
# starts `medialib serve` on a fresh database (SQLite in a temporary directory; PostgreSQL a
# throwaway database on 127.0.0.1:5432, user postgres, dropped at the end), seeds it through
# the CLI and the real HTTP API (bench/seed.py: a local-directory user, an OAuth client, a
# token from the sign-in/consent/token flow, libraries of BENCH_SMALL and BENCH_LARGE objects,
# pools of refresh tokens; the code pools are minted by wrk replaying the approved consent
# form, bench/wrk/mint.lua), then drives every scenario with wrk (keep-alive, fixed
# connections): one warm-up run, then BENCH_REPS measured runs; the median run (by req/s)
# gives req/s, p50 and p99. Any answer outside 2xx (303 for the sign-in form) or any socket
# error fails the run. About 14 minutes with the release build warm (2 CPUs, 2026-11-29;
# issue 22 bounds it at 15); on a fresh machine the crate downloads and the release build come
# first (5 1/2 to 30 minutes on 2 CPUs, the longer sharing them with a CI run). Each step prints
# the time elapsed, and the end the total with and without the build.
#
# In the same run it measures the machine's ceilings: a hello-JSON actix-web server with
# the same worker count (bench/hello), `pgbench -S -M prepared` and a pgbench script with
# the token endpoint's write transaction (bench/pgbench/), SQLite point reads and the
# catalog's row scan in process, argon2id hashes/s with the `local` directory's parameters
# (right before and right after each backend's login scenario: its ratio is to their mean).
# bench/report.py writes bench/results.json and docs/performance.md.
#
# Every wrk run also counts the CPU time of each process over it (the server and PostgreSQL's
# processes from /proc, wrk from `times`), and `pgbench -S` its own and PostgreSQL's: the
# report's "CPU per request" table says where a request's microseconds went, process by
# process (bench/perf_split.py splits them further, from a system-wide `perf record`).
#
# The scenarios include the 10 000-object listing walked in pages (BENCH_PAGE members a page,
# wrk rotating through the page URLs that seed.py finds by following each `next`). After
# seeding, PostgreSQL gets an ANALYZE, as after any bulk load (docs/performance.md).
#
# --smoke: CI's check that the harness does not rot. SQLite only, small libraries, 2-second
# runs, one repetition, the hello ceiling only; debug builds of medialib and bench/hello
# (BENCH_BINARY, if set, is the medialib binary used instead); writes its report to a
# temporary directory, never to docs/.
#
# Environment: BENCH_DURATION (s, default 5), BENCH_WARMUP (s, 1), BENCH_REPS (3),
# BENCH_CONNECTIONS (64), BENCH_CATALOG_CONNECTIONS (8), BENCH_RSS_CONNECTIONS (256),
# BENCH_CATALOG_RSS_CONNECTIONS (512), BENCH_SHED_CONNECTIONS (512), BENCH_FLOOD_DURATION (s of
# each flood client run after its own 1 s warm-up, default 3: thousands of answers even in the
# slowest flood, and the full run stays under issue 22's 15 minutes),
# BENCH_THREADS (wrk threads, 2), BENCH_SMALL (1000), BENCH_LARGE (10000), BENCH_PAGE (1000),
# BENCH_SCENARIOS (default all: every scenario and ceiling; else a list, spaces or commas, of
# describe_public describe_bearer introspect rss catalog_small catalog_large catalog_large_paged
# catalog_rss shed flood login token_refresh token_code ceilings; a partial run never writes docs/ or bench/results.json,
# it prints its table; `shed_compare`, never part of `all`, adds to shed and flood the comparisons
# that have no target: the old fixed bound of 256 in flight, and a catalog flood whose clients
# retry at once), BENCH_BINARY,
# BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
# BENCH_PERF (a directory: profile every measured run system-wide with `perf record -a -F
# BENCH_PERF_FREQ`, default 999, and write its split by bench/perf_split.py there as NAME.RUN.md),
# CARGO_TARGET_DIR (default $HOME/.cache/medialib-target), MEDIALIB_BUILD_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bench=$root/bench
# step, stop_pid, free_port, json_field (its own cleanup replaces lib.sh's).
# shellcheck source=bench/lib.sh
. "$bench/lib.sh"

backends=all
smoke=0
for arg in "$@"; do
    case "$arg" in
    sqlite | postgres | all) backends=$arg ;;
    --smoke) smoke=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "unknown argument: $arg (expected sqlite, postgres, all or --smoke)" >&2
        exit 2
        ;;
    esac
done

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/medialib-target}
jobs=${MEDIALIB_BUILD_JOBS:-2}
duration=${BENCH_DURATION:-5}
flood_duration=${BENCH_FLOOD_DURATION:-3}
warmup=${BENCH_WARMUP:-1}
reps=${BENCH_REPS:-3}
conns=${BENCH_CONNECTIONS:-64}
catalog_conns=${BENCH_CATALOG_CONNECTIONS:-8}
rss_conns=${BENCH_RSS_CONNECTIONS:-256}
catalog_rss_conns=${BENCH_CATALOG_RSS_CONNECTIONS:-512}
shed_conns=${BENCH_SHED_CONNECTIONS:-512}
threads=${BENCH_THREADS:-2}
small=${BENCH_SMALL:-1000}
large=${BENCH_LARGE:-10000}
page=${BENCH_PAGE:-1000}
scenarios=${BENCH_SCENARIOS:-all}
pg_admin=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}
# pgbench, for the ceilings, connects as medialib does: medialib turns libpq's default TLS
# (`prefer`) off on loopback (docs/operations.md), so pgbench does too, unless the environment
# (or an `sslmode` in BENCH_PG_URL) says otherwise. A ceiling that paid for TLS which medialib
# does not would flatter the ratios.
pg_tls=${PGSSLMODE:-disable}
# The bench client's redirect URI (bench/seed.py uses the same).
redirect=http://127.0.0.1/callback
if [ "$smoke" = 1 ]; then
    backends=sqlite
    duration=${BENCH_DURATION:-2}
    flood_duration=${BENCH_FLOOD_DURATION:-2}
    warmup=${BENCH_WARMUP:-1}
    reps=${BENCH_REPS:-1}
    small=${BENCH_SMALL:-50}
    large=${BENCH_LARGE:-200}
    page=${BENCH_PAGE:-50}
    catalog_rss_conns=${BENCH_CATALOG_RSS_CONNECTIONS:-64}
    shed_conns=${BENCH_SHED_CONNECTIONS:-64}
fi
# Whether a scenario (or `ceilings`) is part of this run.
want() {
    [ "$scenarios" = all ] && [ "$1" != shed_compare ] && return 0
    case " ${scenarios//,/ } " in
    *" $1 "*) return 0 ;;
    *) return 1 ;;
    esac
}
case "$backends" in
all) backend_list="sqlite postgres" ;;
*) backend_list=$backends ;;
esac

run_started=$(date +%s)

work=$(mktemp -d "${TMPDIR:-/tmp}/medialib-bench.XXXXXX")
results=$work/results
mkdir -p "$results"
pids=()
pg_dbs=()
server_pid=

cleanup() {
    local status=$?
    set +e
    for pid in "${pids[@]}"; do
        stop_pid "$pid"
    done
    for db in "${pg_dbs[@]}"; do
        psql "$pg_admin" -qtAc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1
    done
    if [ "$status" != 0 ]; then
        for log in "$work"/*.log; do
            [ -s "$log" ] || continue
            echo "-- last lines of $log:" >&2
            tail -n 20 "$log" >&2
        done
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "tools"
if ! command -v wrk >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing wrk from Debian"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq --no-install-recommends wrk >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq --no-install-recommends wrk; }
    else
        echo "wrk is missing: install it (Debian: apt-get install wrk)" >&2
        exit 1
    fi
fi
python=$(command -v python3)
if [ "$backends" != sqlite ]; then
    for tool in psql pgbench; do
        command -v "$tool" >/dev/null || {
            echo "$tool is missing (Debian: postgresql-client)" >&2
            exit 1
        }
    done
fi
echo "wrk: $(wrk --version 2>&1 | head -n 1 | cut -c1-40); python: $($python --version)"

# medialib and the ceilings (bench/hello, a workspace member) in one cargo build, so that the
# dependencies they share are compiled once. The smoke uses debug builds.
profile=release
[ "$smoke" = 1 ] && profile=debug
build=(cargo build -j "$jobs" -p medialib-bench-hello)
[ "$profile" = release ] && build+=(--release)
if [ -n "${BENCH_BINARY:-}" ]; then
    binary=$BENCH_BINARY
else
    build+=(-p medialib)
    binary=$CARGO_TARGET_DIR/$profile/medialib
fi
step "${build[*]}"
started=$(date +%s)
"${build[@]}"
build_secs=$(($(date +%s) - started))
echo "built in ${build_secs}s"
hello=$CARGO_TARGET_DIR/$profile/medialib-bench-hello

wait_ready() { # URL PID
    for _ in $(seq 1 200); do
        kill -0 "$2" 2>/dev/null || {
            echo "the server exited before it was ready" >&2
            return 1
        }
        "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" \
            2>/dev/null && return 0
        sleep 0.2
    done
    echo "$1 did not answer within 40 seconds" >&2
    return 1
}
rss_kib() { # PID FIELD
    awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

# The PostgreSQL cluster behind $pg_admin: every live child of its postmaster (backends, WAL
# writer, checkpointer, autovacuum), and with REAPED=1 also the children that ended (pgbench's
# backends end with it; but so do those of any other client of the cluster, which a wrk
# scenario, whose server's connections live through the run, need not count).
pg_postmaster=
pg_ticks() { # [REAPED]
    [ -n "$pg_postmaster" ] || { echo 0; return; }
    tree_ticks "$pg_postmaster" "${1:-0}"
}

# Waits (at most 60 s) until $base's count of finished sign-ins is the same twice 0.5 s apart.
sign_ins_settle() {
    local before now
    before=$(sign_ins_done)
    for _ in $(seq 1 120); do
        sleep 0.5
        now=$(sign_ins_done)
        [ "$now" = "$before" ] && return 0
        before=$now
    done
    echo "sign-ins still finishing after 60 s" >&2
}
sign_ins_done() {
    "$python" -c 'import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=5).read().decode()
print(sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
          if l.startswith("medialib_sign_ins_total")))' "$base" 2>/dev/null || echo none
}

# The labels of this run's processes for perf_split: the server's PID, and the backends
# serving this run's database apart from the cluster's other processes (its WAL writer and
# checkpointer, and any other client's backends).
perf_labels() {
    echo "--label=$server_pid=server"
    if [ "${backend:-}" = postgres ]; then
        local pid
        for pid in $(psql "$pg_admin" -qtAc "SELECT pid FROM pg_stat_activity
                WHERE datname = '$db'" 2>/dev/null || true); do
            echo "--label=$pid=postgres (the server's connections)"
        done
    fi
}

# One scenario: a warm-up, then $reps runs; one JSON line per run in results/NAME.jsonl.
# wrk_scenario NAME CONNECTIONS SCRIPT URL [VAR=VALUE ...] (the variables are for the script)
wrk_scenario() {
    local name=$1 c=$2 script=$3 url=$4
    shift 4
    local out=$results/$name.jsonl
    : >"$out"
    local run d line
    for run in $(seq 0 "$reps"); do
        d=$duration
        [ "$run" = 0 ] && d=$warmup
        # wrk abandons its connections at the end of a run with requests still queued in the
        # server; they still count against `max_in_flight` until they finish. Let them drain,
        # so that each run starts on a quiet server (else the next run's first requests can be
        # shed with a 503 at 256 connections). Half a second is far longer than that queue
        # takes (256 describes, tens of microseconds each).
        sleep 0.5
        # Abandoned sign-ins take far longer to drain (a hash each, a few at a time, and a
        # debug build's hashes are slow): until the server's count of finished sign-ins stops
        # moving, the next run's would find the sign-in queue full and get 503s.
        if [ "$script" = login.lua ]; then
            sign_ins_settle
        fi
        if [ -n "${pool_hook:-}" ]; then
            "$pool_hook" "$run"
        fi
        local peak_file=$work/peak.$name
        echo 0 >"$peak_file"
        (
            peak=0
            while kill -0 "$server_pid" 2>/dev/null; do
                now=$(rss_kib "$server_pid" VmRSS)
                # Written to a side file and renamed, so a reader never sees it half-written.
                [ "${now:-0}" -gt "$peak" ] && peak=$now &&
                    echo "$peak" >"$peak_file.tmp" && mv -f "$peak_file.tmp" "$peak_file"
                sleep 0.1
            done
        ) &
        local sampler=$!
        local server0 pg0 server1 pg1 client_s labels=()
        server0=$(cpu_ticks "$server_pid")
        pg0=$(pg_ticks)
        # BENCH_PERF=DIR: a system-wide profile of each measured run's middle.
        if [ "$run" != 0 ]; then perf_start "$name.$run" "$d"; fi
        # wrk's own CPU: `times` in the subshell that ran it, which ran nothing else.
        line=$({
            env BENCH_DIR="$bench" BENCH_THREADS="$threads" "$@" \
                wrk -t "$threads" -c "$c" -d "${d}s" --timeout 10s --latency \
                -s "$bench/wrk/$script" "$url"
            times >"$work/times"
        } | tee -a "$work/wrk.log" | sed -n 's/^BENCH_JSON //p')
        server1=$(cpu_ticks "$server_pid")
        pg1=$(pg_ticks)
        client_s=$(children_seconds "$work/times")
        kill "$sampler" 2>/dev/null || true
        wait "$sampler" 2>/dev/null || true
        if [ -n "$perf_pid" ]; then
            mapfile -t labels < <(perf_labels)
            perf_split "$name.$run" "$line" "$((d - 2))" "${labels[@]}"
        fi
        if [ -z "$line" ]; then
            echo "$name: wrk printed no result" >&2
            return 1
        fi
        local rss hwm
        rss=$(cat "$peak_file" 2>/dev/null || true)
        rss=${rss:-0}
        hwm=$(rss_kib "$server_pid" VmHWM)
        hwm=${hwm:-0}
        "$python" - "$line" "$run" "$c" "$rss" "$hwm" "$out" "$name" \
            "$((server1 - server0))" "$((pg1 - pg0))" "${client_s:-0}" "$clk_tck" "$d" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
r |= {"run": int(sys.argv[2]), "connections": int(sys.argv[3]),
      "rss_peak_kib": int(sys.argv[4]), "vmhwm_kib": int(sys.argv[5])}
# CPU seconds of the run by process (the server's and PostgreSQL's from /proc, in ticks).
tck = int(sys.argv[11])
r |= {"server_cpu_s": int(sys.argv[8]) / tck, "pg_cpu_s": int(sys.argv[9]) / tck,
      "client_cpu_s": float(sys.argv[10]), "seconds": int(sys.argv[12])}
name = sys.argv[7]
kind = "warm-up" if r["run"] == 0 else f"run {r['run']}"
print(f"{name:28} {kind:8} {r['rps']:10.1f} req/s  p50 {r['p50_us']/1000:8.2f} ms  "
      f"p99 {r['p99_us']/1000:8.2f} ms  rss {r['rss_peak_kib']/1024:6.1f} MiB"
      + (f"  ({r['allowed']} of {r['requests']} answers outside 2xx, allowed)"
         if r.get("allowed") else "")
      + ("  POOL EXHAUSTED" if r["exhausted"] else ""))
if r["non2xx"] or r["socket_errors"]:
    sys.exit(f"{name}: {r['non2xx']} unexpected answers, {r['socket_errors']} socket errors "
             f"(first: {r['sample']})")
if r["requests"] == 0:
    sys.exit(f"{name}: no request completed")
with open(sys.argv[6], "a") as f:
    f.write(json.dumps(r) + "\n")
PY
    done
}

# Starts `medialib serve` on $db_url at 127.0.0.1:PORT, logging to LOG, with the bench's
# settings (and VAR=VALUE ones of the caller's); sets server_pid.
serve() { # PORT LOG [VAR=VALUE ...]
    local port=$1 log=$2
    shift 2
    env MEDIALIB_LOG=warn MEDIALIB_CODE_TTL=3600 MEDIALIB_RATE_LIMIT_LOGIN=0 \
        MEDIALIB_RATE_LIMIT_TOKEN=0 MEDIALIB_PURGE_INTERVAL=86400 "$@" \
        "$binary" serve --bind "127.0.0.1:$port" --database-url "$db_url" >"$log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
}

# The scenarios of load shedding (issue 24) run against a second server on the same database,
# with other shedding settings: VARIANT is `default` (as shipped), `fixed` (the old rule: 256 in
# flight, no queue-delay shedding) or `uncapped` (no shedding at all). Each variant gets a server
# of its own, freshly started, the one as shipped too: when `default` was the main server, which
# has served every scenario before these, its describe rate against a fresh uncapped server's
# went from 0.81 to 1.62 between full runs in which nothing was shed, which swamped the settings
# being compared (docs/performance.md).
# Runs "$@" with $base and $server_pid pointing at it, then stops it.
with_variant() { # VARIANT COMMAND...
    local variant=$1 main_base=$base main_pid=$server_pid settings=()
    shift
    case "$variant" in
    default) ;;
    fixed) settings=(MEDIALIB_SHED_QUEUE_DELAY=0 MEDIALIB_MAX_IN_FLIGHT=256) ;;
    uncapped) settings=(MEDIALIB_SHED_QUEUE_DELAY=0 MEDIALIB_MAX_IN_FLIGHT=100000) ;;
    esac
    local port
    port=$(free_port)
    serve "$port" "$work/server-$backend-$variant.log" "${settings[@]}"
    base="http://127.0.0.1:$port"
    wait_ready "$base/readyz" "$server_pid"
    "$@"
    stop_pid "$server_pid"
    base=$main_base
    server_pid=$main_pid
}

# A load that may be shed, timed by bench/hello's `flood` client (admitted and refused answers
# apart): results/NAME.jsonl, one line a run, with $flood_bearer as the bearer token if set;
# with flood_patient=1 a connection refused with 503 waits its Retry-After before the next.
# flood_scenario NAME CONNECTIONS PATH [BODY COOKIE]
flood_scenario() {
    local name=$1 c=$2 path=$3
    shift 3
    local out=$results/$name.jsonl run line
    : >"$out"
    for run in $(seq 1 "$reps"); do
        sleep 0.5
        line=$(BENCH_BEARER="${flood_bearer:-}" BENCH_HONOUR_RETRY_AFTER="${flood_patient:-0}" \
            "$hello" flood "$flood_duration" "$c" "$base$path" "$@")
        "$python" - "$line" "$run" "$out" "$name" <<'PY'
import json, sys
r = json.loads(sys.argv[1]) | {"run": int(sys.argv[2])}
print(f"{sys.argv[4]:28} run {r['run']:<4} admitted {r['admitted_rps']:9.1f}/s  "
      f"p50 {r['admitted_p50_us']/1000:8.2f} ms  p99 {r['admitted_p99_us']/1000:8.2f} ms  "
      f"max {r['admitted_max_us']/1000:8.2f} ms  refused {r['refused_rps']:9.1f}/s")
if r["other"]:
    sys.exit(f"{sys.argv[4]}: {r['other']} answers neither admitted nor 503 (first: {r['other_sample']})")
if r["admitted"] == 0:
    sys.exit(f"{sys.argv[4]}: no request was admitted")
with open(sys.argv[3], "a") as f:
    f.write(json.dumps(r) + "\n")
PY
    done
}

# A JSON result of a ceiling measured outside wrk: results/ceiling_NAME.json.
save_ceiling() { # NAME JSON
    printf '%s\n' "$2" >"$results/ceiling_$1.json"
    echo "ceiling $1: $2"
}

pgbench_tps() { # pgbench output on stdin -> tps
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1
}

# Mints N authorization codes into FILE (one token-request body a line) with wrk replaying
# the approved consent form (bench/wrk/mint.lua): far faster than a client in Python, so the
# code pools take seconds. wrk runs until the files hold N lines, then is interrupted.
mint_codes() { # N FILE (uses $base, $seed_dir)
    local n=$1 file=$2 out=$work/mint started have line
    rm -f "$out".*
    started=$(date +%s.%N)
    env BENCH_DIR="$bench" BENCH_THREADS="$threads" BENCH_MINT_N="$n" BENCH_MINT_OUT="$out" \
        BENCH_CONSENT_BODY="$seed_dir/consent.body" BENCH_CONSENT_COOKIE="$seed_dir/consent.cookie" \
        BENCH_REDIRECT="$redirect" \
        wrk -t "$threads" -c "$conns" -d 600s --timeout 10s -s "$bench/wrk/mint.lua" "$base/" \
        >"$work/mint.log" 2>&1 &
    local mint_pid=$!
    while kill -0 "$mint_pid" 2>/dev/null; do
        # Until wrk's threads have opened their files the glob matches nothing and `cat`
        # fails; under `pipefail` that failure would end this script, silently.
        have=$(cat "$out".* 2>/dev/null | wc -l || true)
        [ "$have" -ge "$n" ] && break
        sleep 0.2
    done
    kill -INT "$mint_pid" 2>/dev/null || true
    wait "$mint_pid" 2>/dev/null || true
    line=$(sed -n 's/^BENCH_JSON //p' "$work/mint.log")
    cat "$out".* >"$file" 2>/dev/null || true
    "$python" - "$line" "$n" "$file" "$started" <<'PY'
import json, sys, time
if not sys.argv[1]:
    sys.exit("minting codes: wrk printed no result")
r = json.loads(sys.argv[1])
if r["non2xx"] or r["socket_errors"]:
    sys.exit(f"minting codes: {r['non2xx']} unexpected answers, {r['socket_errors']} socket "
             f"errors (first: {r['sample']})")
have = sum(1 for _ in open(sys.argv[3]))
if have < int(sys.argv[2]):
    sys.exit(f"minting codes: {have} of {sys.argv[2]}")
print(f"minted {have} codes in {time.time() - float(sys.argv[4]):.1f}s")
PY
}

if want ceilings; then
    step "ceiling: hello-JSON actix-web (bench/hello)"
    hello_port=$(free_port)
    "$hello" serve "127.0.0.1:$hello_port" >"$work/hello.log" 2>&1 &
    hello_pid=$!
    pids+=("$hello_pid")
    wait_ready "http://127.0.0.1:$hello_port/" "$hello_pid"
    server_pid=$hello_pid
    wrk_scenario ceiling_hello "$conns" get.lua "http://127.0.0.1:$hello_port/"
    stop_pid "$hello_pid"
fi

if [ "$smoke" = 0 ] && want ceilings; then
    # argon2id hashes/s is measured around each backend's login scenario (below).
    local_rs=$root/crates/adapters-sso/src/local.rs
    m_kib=$(sed -n 's/^pub const MEMORY_KIB: u32 = \([0-9_]*\);.*/\1/p' "$local_rs" | tr -d _)
    t_cost=$(sed -n 's/^pub const ITERATIONS: u32 = \([0-9_]*\);.*/\1/p' "$local_rs" | tr -d _)
    p_cost=$(sed -n 's/^pub const LANES: u32 = \([0-9_]*\);.*/\1/p' "$local_rs" | tr -d _)
    step "ceiling: SQLite prepared point reads, in process"
    save_ceiling sqlite_point "$("$hello" sqlite-point "$duration")"
fi

for backend in $backend_list; do
    step "$backend: a fresh database"
    case "$backend" in
    sqlite)
        db_url="sqlite://$work/medialib.db"
        ;;
    postgres)
        # The cluster's postmaster, whose processes' CPU each scenario counts (pg_ticks).
        pg_data=$(psql "$pg_admin" -qtAc "SHOW data_directory" 2>/dev/null || true)
        pg_postmaster=$(head -n 1 "$pg_data/postmaster.pid" 2>/dev/null || true)
        [ -n "$pg_postmaster" ] && [ -r "/proc/$pg_postmaster/stat" ] || {
            echo "PostgreSQL's postmaster not found (data directory '$pg_data'):" \
                "its CPU per request is not counted" >&2
            pg_postmaster=
        }
        db="medialib_bench_$$"
        psql "$pg_admin" -qtAc "CREATE DATABASE \"$db\"" >/dev/null
        pg_dbs+=("$db")
        db_url="${pg_admin%/*}/$db"
        ;;
    esac
    "$binary" migrate --database-url "$db_url" >/dev/null
    printf '%s\n' 'benchmark password' |
        "$binary" user add --database-url "$db_url" --unique-id bench \
            --first-name Bench --last-name Mark --password-stdin >/dev/null
    client_json=$("$binary" client add --database-url "$db_url" --json \
        --name bench --redirect-uri "$redirect")
    printf '%s' "$client_json" >"$work/client.json"
    client_id=$(json_field "$work/client.json" 'd["client_id"]')
    client_secret=$(json_field "$work/client.json" 'd["client_secret"]')

    port=$(free_port)
    base="http://127.0.0.1:$port"
    serve "$port" "$work/server-$backend.log"
    wait_ready "$base/readyz" "$server_pid"
    echo "medialib serve on $base (pid $server_pid, $(rss_kib "$server_pid" VmRSS) KiB)"

    step "$backend: seeding through the API (libraries of $small and $large objects)"
    seed_dir=$work/seed-$backend
    mkdir -p "$seed_dir"
    started=$(date +%s)
    "$python" "$bench/seed.py" setup "$base" "$seed_dir" "$client_id" "$client_secret" \
        bench 'benchmark password' "$small" "$large"
    echo "seeded in $(($(date +%s) - started))s"
    if [ "$backend" = postgres ]; then
        # Fresh statistics after the bulk load: without them the planner sizes some plans
        # for a table it has never seen (docs/performance.md); autovacuum would get there later.
        psql "$db_url" -qtAc "ANALYZE" >/dev/null
    fi
    state=$seed_dir/state.json
    token=$(json_field "$state" 'd["access_token"]')
    pub_lib=$(json_field "$state" 'd["public_library"]')
    pub_video=$(json_field "$state" 'd["public_video"]')
    lib_small=$(json_field "$state" "d['libraries']['$small']")
    lib_large=$(json_field "$state" "d['libraries']['$large']")
    basic="Basic $(printf '%s:%s' "$client_id" "$client_secret" | base64 -w0)"
    export BENCH_BASE=$base
    if want catalog_large_paged; then
        "$python" "$bench/seed.py" pages "$seed_dir" "$lib_large" "$page" "$seed_dir/pages.txt"
    fi

    step "$backend: scenarios"
    b=$backend
    if want describe_public; then
        wrk_scenario "describe_public_$b" "$conns" get.lua "$base/api/describe/c/$pub_lib/o/$pub_video"
    fi
    if want describe_bearer; then
        wrk_scenario "describe_bearer_$b" "$conns" get.lua "$base/api/describe/c/$pub_lib/o/$pub_video" \
            BENCH_BEARER="$token"
    fi
    if want introspect; then
        wrk_scenario "introspect_$b" "$conns" introspect.lua "$base/api/oauth/introspect" \
            BENCH_BASIC="$basic" BENCH_TOKEN="$token"
    fi
    if want rss; then
        wrk_scenario "rss_${rss_conns}_$b" "$rss_conns" get.lua "$base/api/describe/c/$pub_lib/o/$pub_video" \
            BENCH_BEARER="$token"
    fi
    if want catalog_small; then
        wrk_scenario "catalog_small_$b" "$catalog_conns" get.lua "$base/api/catalog/c/$lib_small/o/0" \
            BENCH_BEARER="$token"
    fi
    if want catalog_large; then
        wrk_scenario "catalog_large_$b" "$catalog_conns" get.lua "$base/api/catalog/c/$lib_large/o/0" \
            BENCH_BEARER="$token"
    fi
    # Memory under many readers of a large answer (issue 24): every connection lists the
    # BENCH_SMALL library (505 KiB of JSON for 1 000 members) at once; the figure is the peak
    # RSS. More connections than the machine serves quickly, so a 503 (load shed) is an
    # expected answer.
    if want catalog_rss; then
        wrk_scenario "catalog_rss_$b" "$catalog_rss_conns" get_shed.lua \
            "$base/api/catalog/c/$lib_small/o/0" BENCH_BEARER="$token"
    fi
    # Shedding by queueing delay (issue 24): the described object read over BENCH_SHED_CONNECTIONS
    # connections, a load this machine serves, against the default settings, the old fixed
    # bound and no shedding at all. The figure is admitted (200) requests/s, as a ratio to the
    # unshed run's.
    # Each setting is driven twice: by wrk (the issue's own measure: its req/s counts every
    # answer, the 200s are worked out from the 503s it allowed) and by the flood client.
    shed_both() { # VARIANT
        wrk_scenario "shed_wrk_${1}_$b" "$shed_conns" get_shed.lua \
            "$base/api/describe/c/$pub_lib/o/$pub_video" BENCH_BEARER="$token"
        flood_bearer=$token flood_scenario "shed_${1}_$b" "$shed_conns" \
            "/api/describe/c/$pub_lib/o/$pub_video"
    }
    # The old fixed bound (issue 24's starting point) only with `shed_compare`: it has no
    # target, and the full run must stay under 15 minutes (issue 22).
    if want shed; then
        shed_variants="default uncapped"
        want shed_compare && shed_variants="default fixed uncapped"
        for variant in $shed_variants; do
            with_variant "$variant" shed_both "$variant"
        done
    fi
    # Loads this machine cannot serve, over BENCH_SHED_CONNECTIONS connections: the BENCH_SMALL
    # library listed (a few milliseconds of database work each), with and without shedding;
    # and sign-ins (argon2id: a few dozen a second here), whose queue is bounded to 16 per
    # sign-in slot whatever the settings. The clients wait the Retry-After of a 503, as apps
    # and browsers do; one more run has them retry at once, as an attacker would. The figure
    # is the admitted requests' p99.
    if want flood; then
        for variant in default uncapped; do
            flood_patient=1 flood_bearer=$token with_variant "$variant" flood_scenario \
                "flood_catalog_${variant}_$b" "$shed_conns" "/api/catalog/c/$lib_small/o/0"
        done
        if want shed_compare; then
            flood_bearer=$token flood_scenario "flood_catalog_impatient_$b" "$shed_conns" \
                "/api/catalog/c/$lib_small/o/0"
        fi
        flood_patient=1 flood_scenario "flood_sign_in_$b" "$shed_conns" /api/oauth/login \
            "$seed_dir/login.body" "$seed_dir/login.cookie"
        flood_scenario "flood_sign_in_impatient_$b" "$shed_conns" /api/oauth/login \
            "$seed_dir/login.body" "$seed_dir/login.cookie"
    fi
    # The same library walked in pages: each request is one page of the walk, in turn.
    if want catalog_large_paged; then
        wrk_scenario "catalog_large_paged_$b" "$catalog_conns" pages.lua "$base/" \
            BENCH_BEARER="$token" BENCH_PAGES="$seed_dir/pages.txt"
    fi
    if want login; then
        # The hash rate right before and right after the sign-ins; their ratio is to the mean
        # of the two. The rate of this memory-bound work moves by 10-20 % within minutes on
        # this shared machine (docs/performance.md), so one measurement minutes away, or even
        # right before, is not the ceiling the sign-ins ran under.
        if [ -n "${m_kib:-}" ]; then
            save_ceiling "argon2_$b" "$("$hello" argon2 "$duration" "$m_kib" "$t_cost" "$p_cost")"
        fi
        wrk_scenario "login_$b" "$conns" login.lua "$base/" \
            BENCH_LOGIN_BODY="$seed_dir/login.body" BENCH_LOGIN_COOKIE="$seed_dir/login.cookie"
        if [ -n "${m_kib:-}" ]; then
            save_ceiling "argon2_after_$b" "$("$hello" argon2 "$duration" "$m_kib" "$t_cost" "$p_cost")"
        fi
    fi

    # PostgreSQL: the token tables grow by thousands of rows as each pool is minted, so their
    # statistics are refreshed after each one, as autovacuum would soon do in a deployment.
    # Without it, the plans the server's connections cache stay those made for nearly empty
    # tables (sequential scans), and throughput falls run after run (docs/performance.md).
    token_tables="oauth_codes, oauth_grants, oauth_access_tokens, oauth_refresh_tokens"
    fresh_token_stats() {
        if [ "$backend" = postgres ]; then
            psql "$db_url" -qtAc "ANALYZE $token_tables" >/dev/null
        fi
    }
    if [ "$backend" = postgres ] && { want token_refresh || want token_code; }; then
        # Count the token tables' scans from here: the plans' kind is part of the result.
        psql "$db_url" -qtAc "SELECT pg_stat_reset()" >/dev/null
    fi
    # Refresh tokens are single use; each run chains its own pool (2 per connection).
    refresh_pool() {
        "$python" "$bench/seed.py" refresh "$seed_dir" $((conns * 2)) "$seed_dir/refresh.txt"
        fresh_token_stats
    }
    pool_hook=refresh_pool
    if want token_refresh || want token_code; then
        wrk_scenario "token_refresh_$b" "$conns" token_refresh.lua "$base/" \
            BENCH_BASIC="$basic" BENCH_POOL="$seed_dir/refresh.txt"
        # Codes too, and they do not chain: each run gets its own pool (code_pool below).
        refresh_rps=$("$python" -c 'import json, sys; print(max(json.loads(l)["rps"] for l in open(sys.argv[1])))' \
            "$results/token_refresh_$b.jsonl")
    fi
    # Each run's pool is sized from the fastest rate seen so far: this scenario's runs and the
    # refresh scenario's (a code grant does more than a refresh, so that rate bounds it from
    # above), with half again as many to spare, so that no run runs dry and the minting
    # (seconds per run) stays short. The warm-up alone is no guide: once, a 2 s warm-up at
    # 1,202 req/s sized a pool that a 1,818 req/s run emptied.
    code_pool() {
        local secs=$duration
        [ "$1" = 0 ] && secs=$warmup
        local n
        n=$("$python" - "$results/token_code_$b.jsonl" "$refresh_rps" "$secs" "$conns" <<'PY'
import json, os, sys
path, refresh_rps, secs, conns = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seen = [json.loads(l)["rps"] for l in open(path)] if os.path.exists(path) else []
rate = max(seen + [refresh_rps])
print(int(rate * secs * 1.5) + conns * 2)
PY
        )
        mint_codes "$n" "$seed_dir/codes.txt"
        fresh_token_stats
    }
    pool_hook=code_pool
    if want token_code; then
        wrk_scenario "token_code_$b" "$conns" token_code.lua "$base/" \
            BENCH_BASIC="$basic" BENCH_POOL="$seed_dir/codes.txt"
    fi
    pool_hook=

    # The scenarios are over: the server's peak RSS, then it stops, which also makes its
    # PostgreSQL connections end and flush their statistics (an idle one would wait 10 s).
    echo "$backend: server peak RSS (VmHWM) $(rss_kib "$server_pid" VmHWM) KiB"
    save_ceiling "server_$b" "{\"vmhwm_kib\": $(rss_kib "$server_pid" VmHWM)}"
    stop_pid "$server_pid"
    server_pid=
    if [ "$backend" = postgres ] && [ "$smoke" = 0 ] && { want token_refresh || want token_code; }; then
        for _ in $(seq 1 100); do
            [ "$(psql "$db_url" -qtAc "SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()")" = 0 ] && break
            sleep 0.1
        done
        psql "$db_url" -qtAc "SELECT coalesce(json_object_agg(relname,
                json_build_object('seq_scan', seq_scan, 'seq_tup_read', seq_tup_read,
                                  'idx_scan', coalesce(idx_scan, 0))), '{}')
            FROM pg_stat_user_tables WHERE relname IN ('oauth_codes', 'oauth_grants',
                'oauth_access_tokens', 'oauth_refresh_tokens', 'oauth_clients')" \
            >"$results/tablescans_$b.json"
        echo "token tables' scans during the token scenarios: $(cat "$results/tablescans_$b.json")"
    fi

    if [ "$smoke" = 0 ] && want ceilings; then
        step "$backend: ceilings on the same database"
        case "$backend" in
        sqlite)
            save_ceiling "scan_small_$b" "$("$hello" sqlite-scan "$work/medialib.db" "$lib_small" "$duration")"
            ;;
        postgres)
            grant=$(psql "$db_url" -qtAc "SELECT id FROM oauth_grants LIMIT 1")
            psql "$db_url" -qtAc "INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at)
                SELECT 'bench-' || n, '$grant', 1, 4000000000 FROM generate_series(1, 200000) n" >/dev/null
            for script in token_write scan; do
                out=$(PGSSLMODE=$pg_tls pgbench -n -M prepared -c 8 -j "$threads" -T "$duration" \
                    -D grant="$grant" -D lib="$lib_small" -f "$bench/pgbench/$script.sql" "$db_url" 2>&1)
                printf '%s\n' "$out" >>"$work/pgbench.log"
                tps=$(printf '%s\n' "$out" | pgbench_tps)
                case "$script" in
                token_write) save_ceiling pg_token_write "{\"tps\": $tps, \"clients\": 8}" ;;
                scan)
                    rows=$("$python" -c 'import sys; print(float(sys.argv[1]) * int(sys.argv[2]))' "$tps" "$small")
                    save_ceiling "scan_small_$b" "{\"rows_per_second\": $rows, \"scans_per_second\": $tps, \"clients\": 8}"
                    ;;
                esac
            done
            pgdb="medialib_bench_pgbench_$$"
            psql "$pg_admin" -qtAc "CREATE DATABASE \"$pgdb\"" >/dev/null
            pg_dbs+=("$pgdb")
            pg_url="${pg_admin%/*}/$pgdb"
            pgbench -i -q -s 10 "$pg_url" >>"$work/pgbench.log" 2>&1
            # With the CPU of pgbench and of PostgreSQL per transaction, beside the describe's.
            pg0=$(pg_ticks 1)
            # (a subshell: `times` there counts pgbench alone)
            (PGSSLMODE=$pg_tls pgbench -n -S -M prepared -c 8 -j "$threads" -T "$duration" "$pg_url" \
                >"$work/pgbench.out" 2>&1; times >"$work/times")
            # Its backends' CPU reaches the postmaster's count once they have ended and been
            # reaped.
            for _ in $(seq 1 50); do
                [ "$(psql "$pg_admin" -qtAc "SELECT count(*) FROM pg_stat_activity
                    WHERE datname = '$pgdb'")" = 0 ] && break
                sleep 0.1
            done
            sleep 0.3
            pg1=$(pg_ticks 1)
            out=$(cat "$work/pgbench.out")
            printf '%s\n' "$out" >>"$work/pgbench.log"
            tps=$(printf '%s\n' "$out" | pgbench_tps)
            cpu=$("$python" -c 'import sys
tps, secs, client, pg, tck = map(float, sys.argv[1:])
n = tps * secs
print(f"\"client_cpu_us\": {client / n * 1e6:.1f}, \"pg_cpu_us\": {pg / tck / n * 1e6:.1f}")' \
                "$tps" "$duration" "$(children_seconds "$work/times")" "$((pg1 - pg0))" "$clk_tck")
            save_ceiling pg_select "{\"tps\": $tps, \"clients\": 8, \"scale\": 10, $cpu}"
            ;;
        esac
    fi
done

step "report"
if [ "$smoke" = 1 ] || [ "$scenarios" != all ]; then
    out_json=$work/results.json
    out_md=$work/performance.md
else
    out_json=$bench/results.json
    out_md=$root/docs/performance.md
fi
"$python" "$bench/report.py" "$results" "$out_json" "$out_md" \
    --command "bench/run.sh $* " --duration "$duration" --flood-duration "$flood_duration" \
    --warmup "$warmup" --reps "$reps" \
    --connections "$conns" --catalog-connections "$catalog_conns" --threads "$threads" \
    --small "$small" --large "$large" --page "$page" --smoke "$smoke"
if [ "$smoke" = 1 ]; then
    echo "smoke passed (report not kept: $out_md)"
elif [ "$scenarios" != all ]; then
    # A partial run: its table only, docs/ and bench/results.json are left as they are.
    sed -n '/^| scenario/,/^$/p; /^| load | setting/,/^$/p' "$out_md"
    echo "partial run ($scenarios): report not kept"
else
    echo "wrote $out_json and $out_md"
fi
t=$(($(date +%s) - run_started))
m=$((t - build_secs))
printf 'bench/run.sh %s: %d:%02d in all, %d:%02d without the build\n' "$*" $((t / 60)) $((t % 60)) \
    $((m / 60)) $((m % 60))
