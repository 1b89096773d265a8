#!/usr/bin/env bash
# CPU per request, counted in instructions by valgrind's callgrind: repeatable on a shared,
# loaded machine, where wrk's req/s move by ±20 % from run to run (docs/performance.md).
#
#   bench/callgrind.sh BINARY SCENARIO [REQUESTS]
#
# Runs the release `medialib` BINARY under callgrind twice, on a copy of one demo database
# (`medialib demo`, made once in $BENCH_CG_DIR), and sends it 200 requests the first time and
# 200 + REQUESTS (default 2000) the second, one after the other over one keep-alive connection
# (curl). Start-up, migrations and shutdown are the same in both runs, so the difference of
# the two totals divided by REQUESTS is the instructions one request costs. Prints one line:
#
#   SCENARIO  Ir/request  (Ir of the short run, Ir of the long run)
#
# and keeps the long run's profile as $BENCH_CG_DIR/callgrind.out.SCENARIO
# (`callgrind_annotate --inclusive=yes` on it names where the instructions go).
#
# Scenarios:
#   describe        GET /api/describe/c/{library}/o/{public video} of the demo: a processed
#                   video, with stills (the describe of real media)
#   describe_public the same GET of the object bench/run.sh describes (bench/seed.py's public
#                   video, no media), anonymous: the bench's public describe
#   describe_bearer the same with seed.py's access token: the bench's bearer describe
#   healthz         GET /healthz: a constant JSON answer through medialib's whole middleware
#                   stack (request id and span, path normalisation, metrics, CORS, headers);
#                   the describe's cost less this one is the handler's
#   hello           GET / of bench/hello (bare actix-web hello-JSON, the bench's ceiling);
#                   its binary is BENCH_HELLO (default: `medialib-bench-hello` beside BINARY)
#   describe_cors   the same with `Origin: https://lms.example.edu`, that origin configured
#   token           POST /api/oauth/access_token with an unknown client (a 401 after both
#                   rate limiters counted it; limits at 1 000 000 a minute, never reached)
#
# Environment: MEDIALIB_LOG (default `warn`, as bench/run.sh), BENCH_CG_DIR (default
# /tmp/medialib-callgrind), BENCH_CG_LIBRARIES (default "1 2": the objects of seed.py's small
# and large libraries; "1000 10000" seeds the database bench/run.sh measures, where the
# B-trees are as deep as there). Only loopback; each run stops by itself. describe_public and
# describe_bearer seed a database of their own through the CLI and the HTTP API, as
# bench/run.sh does, on every invocation (the token expires), outside valgrind.
set -euo pipefail

binary=$(realpath "$1")
scenario=$2
requests=${3:-2000}
dir=${BENCH_CG_DIR:-/tmp/medialib-callgrind}
log_level=${MEDIALIB_LOG:-warn}
hello=${BENCH_HELLO:-$(dirname "$binary")/medialib-bench-hello}
read -r small large <<<"${BENCH_CG_LIBRARIES:-1 2}"
mkdir -p "$dir"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_ready() { # URL PID
    for _ in $(seq 1 600); do
        if curl -fs -o /dev/null "$1"; then return 0; fi
        kill -0 "$2" 2>/dev/null || { echo "server exited" >&2; return 1; }
        sleep 0.2
    done
    echo "server not ready" >&2
    return 1
}

# One demo database, made once (argon2 hashing is slow under valgrind, so not there).
if [[ ! -f $dir/demo.db ]]; then
    port=$(free_port)
    MEDIALIB_LOG=warn "$binary" demo --database-url "sqlite://$dir/demo.db" \
        --bind "127.0.0.1:$port" >"$dir/demo.log" 2>&1 &
    pid=$!
    wait_ready "http://127.0.0.1:$port/readyz" "$pid"
    kill -TERM "$pid"
    wait "$pid" || true
fi
# The demo library and its public video (the demo's first item).
read -r library video < <(sqlite3 "$dir/demo.db" \
    "select replace(m.collection_id, '-', ''), replace(o.id, '-', '') from objects o
     join memberships m on m.member_id = o.id
     where o.public = 1 and o.object_type = 'video' limit 1;" | tr '|' ' ')
source_db=$dir/demo.db
token=
# The bench's shape: a user, a client, seed.py's libraries, its public video and token.
if [[ $scenario == describe_public || $scenario == describe_bearer ]]; then
    source_db=$dir/seeded-$$.db
    seed=$dir/seed-$$
    rm -rf "$source_db" "$seed"
    mkdir -p "$seed"
    "$binary" migrate --database-url "sqlite://$source_db" >/dev/null
    printf '%s\n' 'benchmark password' |
        "$binary" user add --database-url "sqlite://$source_db" --unique-id bench \
            --first-name Bench --last-name Mark --password-stdin >/dev/null
    "$binary" client add --database-url "sqlite://$source_db" --json --name bench \
        --redirect-uri http://127.0.0.1/callback >"$seed/client.json"
    read -r client_id client_secret < <(python3 -c \
        'import json,sys; d=json.load(open(sys.argv[1])); print(d["client_id"], d["client_secret"])' \
        "$seed/client.json")
    # Whatever happens from here, the seeding server and the copies go when the script ends.
    trap 'if [[ -n ${seed_pid:-} ]]; then kill "$seed_pid" 2>/dev/null || true; fi; rm -rf "$seed" "$source_db" "$source_db-wal" "$source_db-shm"' EXIT
    port=$(free_port)
    MEDIALIB_LOG=warn "$binary" serve --database-url "sqlite://$source_db" \
        --bind "127.0.0.1:$port" >"$seed/server.log" 2>&1 &
    pid=$!
    seed_pid=$pid
    wait_ready "http://127.0.0.1:$port/readyz" "$pid"
    python3 "$(dirname "$0")/seed.py" setup "http://127.0.0.1:$port" "$seed" "$client_id" \
        "$client_secret" bench 'benchmark password' "$small" "$large" >/dev/null
    kill -TERM "$pid"
    wait "$pid" || true
    seed_pid=
    read -r library video token < <(python3 -c \
        'import json,sys; d=json.load(open(sys.argv[1])); print(d["public_library"], d["public_video"], d["access_token"])' \
        "$seed/state.json")
    rm -rf "$seed"
fi

run() { # COUNT -> total Ir
    local count=$1 port db out pid base
    port=$(free_port)
    db=$dir/run-$$.db
    out=$dir/callgrind.out.$$
    rm -f "$db" "$db-wal" "$db-shm" "$out"
    cp "$source_db" "$db"
    # MALLOC_ARENA_MAX set: else `serve` executes itself again (crates/medialib/src/malloc.rs)
    # and the new image runs outside valgrind.
    local env=(MALLOC_ARENA_MAX=2 MEDIALIB_LOG="$log_level" MEDIALIB_LOG_FORMAT=json MEDIALIB_PURGE_INTERVAL=86400
        MEDIALIB_RATE_LIMIT_TOKEN=1000000 MEDIALIB_RATE_LIMIT_LOGIN=1000000)
    [[ $scenario == describe_cors ]] && env+=(MEDIALIB_CORS_ORIGINS=https://lms.example.edu)
    if [[ $scenario == hello ]]; then
        valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$hello" serve "127.0.0.1:$port" >"$dir/server.log" 2>"$dir/valgrind.log" &
    else
        env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$binary" serve --database-url "sqlite://$db" --bind "127.0.0.1:$port" \
            >"$dir/server.log" 2>"$dir/valgrind.log" &
    fi
    pid=$!
    base=http://127.0.0.1:$port
    if [[ $scenario == hello ]]; then
        wait_ready "$base/" "$pid"
    else
        wait_ready "$base/readyz" "$pid"
    fi
    local cfg=$dir/curl-$$.cfg
    : >"$cfg"
    for _ in $(seq 1 "$count"); do
        case $scenario in
        describe | describe_cors | describe_public | describe_bearer)
            echo "url = \"$base/api/describe/c/$library/o/$video\"" >>"$cfg" ;;
        healthz) echo "url = \"$base/healthz\"" >>"$cfg" ;;
        hello) echo "url = \"$base/\"" >>"$cfg" ;;
        token)
            printf 'url = "%s/api/oauth/access_token"\n' "$base" >>"$cfg"
            echo 'data = "grant_type=refresh_token&refresh_token=mlr_x&client_id=nobody&client_secret=x"' >>"$cfg" ;;
        esac
        echo 'output = "/dev/null"' >>"$cfg"
    done
    local headers=()
    [[ $scenario == describe_cors ]] && headers=(-H "Origin: https://lms.example.edu")
    [[ $scenario == describe_bearer ]] && headers=(-H "Authorization: Bearer $token")
    curl -s "${headers[@]}" -K "$cfg"
    kill -TERM "$pid"
    wait "$pid" || true
    grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
    # The long run's profile is kept, for callgrind_annotate.
    mv "$out" "$dir/callgrind.out.$scenario"
    rm -f "$db" "$db-wal" "$db-shm" "$cfg"
}

short=$(run 200)
long=$(run $((200 + requests)))
echo "$scenario $(((long - short) / requests)) Ir/request ($short, $long)"
