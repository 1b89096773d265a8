#!/usr/bin/env bash
# Checks the served OpenAPI document against the running service.
#
# 1. Installs the pinned Python tools (requirements.txt) into a venv under
#    $HOME/.cache/medialib-venv, reusing it while requirements.txt is unchanged.
# 2. Builds the debug binary (`cargo build -p medialib`) and starts `medialib serve` on a
#    fresh SQLite database in a temporary directory, on a free port of 127.0.0.1.
# 3. Fetches /api/openapi.json and validates it with openapi-spec-validator.
# 4. Runs schemathesis against the server with these checks: not_a_server_error,
#    status_code_conformance, response_schema_conformance and content_type_conformance.
#    A 5xx (other than the documented 501 for a method a path does not implement, see
#    schemathesis.toml) or a response that the document does not describe fails the run.
#
# The server always stops when the script ends. Its log is printed when a step fails.
#
# Signed in: before the run, a local-directory user (an organization admin) and an OAuth
# client are created with the CLI, and mint_token.py gets a real access token through the
# sign-in and consent pages and the token endpoint. schemathesis sends it on every call, so it
# exercises what an authorized caller gets as well as input validation and the fallbacks.
# A library made with that token is where describe PUT creates objects (schemathesis.toml),
# so that the stateful phase follows the document's links (a created `uuid` to the read,
# update, media and delete operations) to real objects. POST /api/logout is not fuzzed: it
# would end that token (schemathesis.toml says why).
#
# Environment:
#   SCHEMATHESIS_MAX_EXAMPLES  test cases per operation and phase (default 25)
#   SCHEMATHESIS_SEED          seed of the generated data (default 1, so CI runs repeat)
#   SCHEMATHESIS_TIMEOUT       hard limit of the schemathesis run, seconds (default 300)
#   MEDIALIB_VENV              the venv (default $HOME/.cache/medialib-venv)
#   MEDIALIB_BUILD_JOBS        cargo build parallelism (default 2)
#   CARGO_TARGET_DIR           where the binary is built (default $HOME/.cache/medialib-target)
set -euo pipefail
cd "$(dirname "$0")/../.."

here=tests/schemathesis
venv=${MEDIALIB_VENV:-$HOME/.cache/medialib-venv}
jobs=${MEDIALIB_BUILD_JOBS:-2}
max_examples=${SCHEMATHESIS_MAX_EXAMPLES:-25}
seed=${SCHEMATHESIS_SEED:-1}
st_timeout=${SCHEMATHESIS_TIMEOUT:-300}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/medialib-target}

step() {
    printf '\n== %s\n' "$*"
}

step "Python tools (venv: $venv)"
stamp="$venv/.medialib-requirements.sha256"
want=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv"; then
        # A Debian python3 without its venv module: add it (CI runs as root).
        rm -rf "$venv"
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends python3 python3-venv
            python3 -m venv "$venv"
        else
            echo "cannot create a Python venv: install python3 with its venv module" >&2
            exit 1
        fi
    fi
fi
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    echo "$want" >"$stamp"
else
    echo "up to date with $here/requirements.txt"
fi
"$venv/bin/schemathesis" --version
"$venv/bin/python" -m pip show openapi-spec-validator 2>/dev/null | grep -E '^(Name|Version):' | tr '\n' ' '
echo

step "cargo build -p medialib (debug)"
cargo build -p medialib -j "$jobs"
binary="$CARGO_TARGET_DIR/debug/medialib"

step "medialib serve on a fresh SQLite database"
work=$(mktemp -d)
server_pid=
stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=
}
on_exit() {
    status=$?
    stop_server
    if [ "$status" != 0 ] && [ -s "$work/server.log" ]; then
        echo "-- last lines of the server log ($work/server.log):" >&2
        tail -n 40 "$work/server.log" >&2
    fi
    rm -rf "$work"
    exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

step "a user and an OAuth client for schemathesis"
db_url="sqlite://$work/medialib.db"
"$binary" migrate --database-url "$db_url" >/dev/null
printf '%s\n' 'schemathesis password' |
    "$binary" user add --database-url "$db_url" --unique-id schemathesis \
        --first-name Schema --last-name Thesis --org-admin --password-stdin >/dev/null
client_json=$("$binary" client add --database-url "$db_url" --json \
    --name schemathesis --redirect-uri http://127.0.0.1/callback)
client_id=$(printf '%s' "$client_json" | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["client_id"])')
client_secret=$(printf '%s' "$client_json" | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["client_secret"])')
echo "user schemathesis (org admin), client $client_id"

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
MEDIALIB_LOG=${MEDIALIB_LOG:-warn} "$binary" serve \
    --bind "127.0.0.1:$port" \
    --database-url "$db_url" \
    >"$work/server.log" 2>&1 &
server_pid=$!

fetch() {
    "$venv/bin/python" - "$@" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
        body = r.read()
except Exception as e:  # noqa: BLE001 - any failure means "not yet"
    sys.exit(f"{sys.argv[1]}: {e}")
if len(sys.argv) > 2:
    open(sys.argv[2], "wb").write(body)
PY
}

ready=0
for _ in $(seq 1 120); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "medialib serve exited before it was ready" >&2
        exit 1
    fi
    if fetch "$base/readyz" 2>/dev/null; then
        ready=1
        break
    fi
    sleep 0.5
done
if [ "$ready" != 1 ]; then
    echo "medialib serve did not answer $base/readyz within 60 seconds" >&2
    exit 1
fi
echo "ready on $base"

step "an access token through the authorization pages"
token=$("$venv/bin/python" "$here/mint_token.py" "$base" "$client_id" "$client_secret" schemathesis 'schemathesis password')
echo "got an access token (${token:0:4}…)"

step "a library for the creating operations"
# schemathesis.toml creates objects in it, so that the stateful phase follows the document's
# links from real objects.
MEDIALIB_SCHEMATHESIS_LIBRARY=$("$venv/bin/python" - "$base" "$token" <<'PY'
import json, sys, urllib.request
req = urllib.request.Request(
    sys.argv[1] + "/api/describe/c/0/o/0",
    data=b"type=catalog&title=schemathesis",
    method="PUT",
    headers={"Authorization": "Bearer " + sys.argv[2]},
)
with urllib.request.urlopen(req, timeout=10) as r:
    print(json.load(r)["uuid"])
PY
)
export MEDIALIB_SCHEMATHESIS_LIBRARY
echo "library $MEDIALIB_SCHEMATHESIS_LIBRARY"

step "openapi-spec-validator"
fetch "$base/api/openapi.json" "$work/openapi.json"
"$venv/bin/openapi-spec-validator" "$work/openapi.json"

step "schemathesis (at most $max_examples examples per operation, seed $seed, ${st_timeout}s)"
started=$(date +%s)
config="$PWD/$here/schemathesis.toml"
hooks="$PWD/$here/hooks.py"
# From the temporary directory, so that nothing schemathesis writes lands in the work tree.
# One worker: with two threads CPython 3.11 (this machine's python3) now and then fails inside
# hypothesis' ast.parse with "SystemError: AST constructor recursion depth mismatch" (its AST
# recursion counter is shared between threads; seen 2026-11-28), a Runtime Error of the tool
# that says nothing about medialib.
(cd "$work" && SCHEMATHESIS_HOOKS="$hooks" \
    timeout --kill-after=10 "$st_timeout" "$venv/bin/schemathesis" \
    --config-file "$config" \
    --no-color \
    run "$work/openapi.json" \
    --url "$base" \
    --header "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
    --max-examples "$max_examples" \
    --seed "$seed" \
    --workers 1 \
    --request-timeout 10) ||
    {
        status=$?
        [ "$status" = 124 ] && echo "schemathesis did not finish within ${st_timeout}s" >&2
        exit "$status"
    }
echo "schemathesis took $(($(date +%s) - started))s"
