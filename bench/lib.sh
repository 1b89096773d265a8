# Shell helpers shared by bench/run.sh, bench/media.sh and bench/pipeline.sh (sourced; bash).
#
# They use the sourcing script's globals: `work` (its temporary directory), `pids` (the
# processes `cleanup` stops), `run_started` (for `step`), `python`, `bench`, `binary` and
# `redirect` (for `start_medialib`), and set `base`, `token`, `lib`, `server_pid`,
# `server_dir` (`start_medialib`).

# CPU time by process, in clock ticks, so that a scenario can say where its microseconds went:
# the server, the load generator and PostgreSQL (docs/performance.md, "CPU per request").
clk_tck=$(getconf CLK_TCK)
# cpu_ticks PID [CHILDREN]: user + system time of PID (with CHILDREN=1 also that of its
# children it has reaped). The command name in /proc/PID/stat may hold spaces: the fields are
# counted after its closing parenthesis.
cpu_ticks() {
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null |
        awk -v c="${2:-0}" '{ t = $12 + $13; if (c) t += $14 + $15; print t }' || echo 0
}
# tree_ticks PID [REAPED]: cpu_ticks of PID (with REAPED=1 also of the children it has reaped)
# and of its live children (nginx's master and workers; a postmaster's backends).
tree_ticks() {
    local t child
    t=$(cpu_ticks "$1" "${2:-0}")
    for child in $(pgrep -P "$1" || true); do
        t=$((t + $(cpu_ticks "$child" || echo 0)))
    done
    echo "${t:-0}"
}
# The user + system seconds of a shell's children, from the output of its `times` (which must
# run in that shell itself: in a pipeline or a `$(...)` it would be a new process's, with no
# children yet).
children_seconds() { # FILE
    sed -n 2p "$1" 2>/dev/null | awk '{
        split($1, u, "m"); split($2, s, "m"); sub("s", "", u[2]); sub("s", "", s[2])
        print u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}

# BENCH_PERF=DIR: a system-wide `perf record -F BENCH_PERF_FREQ` (default 999) of a run's
# middle, from 1 s after it starts to 1 s before it ends (runs of 4 s or more), then split by
# bench/perf_split.py into DIR/NAME.md (the profile stays as DIR/NAME.data for `perf report`).
# perf_start NAME SECONDS starts the recorder and sets perf_pid (empty without BENCH_PERF);
# after the run, perf_split NAME WRK_JSON SECONDS [--label PID=NAME ...] waits for it and
# splits it, counting the requests at the run's mean rate over the profile's seconds.
perf_freq=${BENCH_PERF_FREQ:-999}
perf_pid=
perf_start() {
    perf_pid=
    if [ -z "${BENCH_PERF:-}" ] || [ "$2" -lt 4 ]; then return 0; fi
    mkdir -p "$BENCH_PERF"
    # BENCH_PERF_ARGS: more options for perf record (`--call-graph dwarf`, say).
    # shellcheck disable=SC2086
    (sleep 1 && exec perf record -q -a -F "$perf_freq" ${BENCH_PERF_ARGS:-} \
        -o "$BENCH_PERF/$1.data" -- sleep $(($2 - 2))) >/dev/null 2>&1 &
    perf_pid=$!
}
perf_split() {
    local name=$1 json=$2 secs=$3 data=${BENCH_PERF:-}/$1.data requests
    shift 3
    [ -n "$perf_pid" ] || return 0
    wait "$perf_pid" || true
    perf_pid=
    [ -s "$data" ] || { echo "$name: no profile recorded (is perf installed and allowed?)" >&2; return 0; }
    requests=$("$python" -c 'import json, sys; print(json.loads(sys.argv[1])["rps"] * float(sys.argv[2]))' \
        "$json" "$secs")
    perf script -i "$data" -F pid,tid,comm,ip,sym,dso 2>/dev/null |
        "$python" "$bench/perf_split.py" --freq "$perf_freq" --requests "$requests" --top 25 "$@" \
            >"$BENCH_PERF/$name.md" || true
    echo "$name: profile split in $BENCH_PERF/$name.md"
}

step() {
    local t=$(($(date +%s) - run_started))
    printf '\n== [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"
}

stop_pid() {
    local pid=$1
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local status=$?
    set +e
    for pid in "${pids[@]}"; do
        stop_pid "$pid"
    done
    if [ "$status" != 0 ]; then
        for log in "$work"/*.log "$work"/*/*.log; do
            [ -s "$log" ] || continue
            echo "-- last lines of $log:" >&2
            tail -n 20 "$log" >&2
        done
    fi
    rm -rf "$work"
    exit "$status"
}

apt_install() { # PACKAGE (for COMMAND)
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing $1 from Debian"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq --no-install-recommends "$1" >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$1" >/dev/null; }
    else
        echo "$2 is missing: install it (Debian: apt-get install $1)" >&2
        exit 1
    fi
}

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # URL PID [-f]: until the URL answers over HTTP (with -f: a 2xx)
    for _ in $(seq 1 300); do
        kill -0 "$2" 2>/dev/null || {
            echo "the server exited before it was ready" >&2
            return 1
        }
        curl -s ${3:-} -o /dev/null "$1" && return 0
        sleep 0.2
    done
    echo "$1 did not answer within 60 seconds" >&2
    return 1
}
# make_clip SECONDS WIDTHxHEIGHT OUT: a clip with sound (ffmpeg's testsrc2 at 30 fps and a
# beeping tone, H.264/AAC), encoded once and not measured: what the media benchmarks upload.
make_clip() {
    step "a $1 s $2 clip with sound (encoded once, not measured)"
    ffmpeg -hide_banner -loglevel error -y \
        -f lavfi -i "testsrc2=size=$2:rate=30:duration=$1" \
        -f lavfi -i "sine=frequency=440:beep_factor=4:duration=$1" \
        -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 128k -shortest "$3"
    ls -l "$3"
}

json_field() { # FILE EXPR (python expression on `d`)
    "$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# A fresh medialib on a fresh SQLite database in $work/NAME, storing into STORAGE_URL (extra
# environment after it); sets base, token, lib, server_pid and server_dir.
start_medialib() { # NAME STORAGE_URL [VAR=VALUE ...]
    local name=$1 storage=$2
    shift 2
    server_dir=$work/$name
    mkdir -p "$server_dir"
    local db_url="sqlite://$server_dir/medialib.db"
    "$binary" migrate --database-url "$db_url" >/dev/null
    printf '%s\n' 'benchmark password' |
        "$binary" user add --database-url "$db_url" --unique-id bench \
            --first-name Bench --last-name Mark --password-stdin >/dev/null
    "$binary" client add --database-url "$db_url" --json --name bench \
        --redirect-uri "$redirect" >"$server_dir/client.json"
    local port
    port=$(free_port)
    base="http://127.0.0.1:$port"
    env MEDIALIB_LOG=warn MEDIALIB_RATE_LIMIT_LOGIN=0 MEDIALIB_RATE_LIMIT_TOKEN=0 \
        MEDIALIB_PURGE_INTERVAL=86400 MEDIALIB_ACCESS_TOKEN_TTL=86400 \
        MEDIALIB_STORAGE_URL="$storage" "$@" \
        "$binary" serve --bind "127.0.0.1:$port" --database-url "$db_url" \
        >"$server_dir/server.log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    wait_http "$base/readyz" "$server_pid" -f
    "$python" "$bench/seed.py" setup "$base" "$server_dir" \
        "$(json_field "$server_dir/client.json" 'd["client_id"]')" \
        "$(json_field "$server_dir/client.json" 'd["client_secret"]')" \
        bench 'benchmark password' 1 1
    token=$(json_field "$server_dir/state.json" 'd["access_token"]')
    lib=$(json_field "$server_dir/state.json" 'd["public_library"]')
    echo "medialib serve on $base, $storage (pid $server_pid)"
}
stop_medialib() {
    stop_pid "$server_pid"
    rm -rf "$server_dir"
}

# Sets `smoke` from the script's arguments (`--smoke`; `-h`/`--help` print the script's header
# comment and exit 0; anything else exits 2).
parse_smoke_argument() { # "$@" of the script (its path in $0)
    smoke=0
    for arg in "$@"; do
        case "$arg" in
        --smoke) smoke=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "unknown argument: $arg (expected --smoke)" >&2
            exit 2
            ;;
        esac
    done
}

# Sets `binary` and `profile`: BENCH_BINARY when set, else medialib built with cargo (release, or debug for
# --smoke) into CARGO_TARGET_DIR with `jobs` jobs.
build_medialib() {
    profile=release
    [ "$smoke" = 1 ] && profile=debug
    if [ -n "${BENCH_BINARY:-}" ]; then
        binary=$BENCH_BINARY
        return
    fi
    local build=(cargo build -j "$jobs" -p medialib)
    [ "$profile" = release ] && build+=(--release)
    step "${build[*]}"
    local started
    started=$(date +%s)
    "${build[@]}"
    echo "built in $(($(date +%s) - started))s"
    binary=$CARGO_TARGET_DIR/$profile/medialib
}
