# Shared by bench/webhook-listener.sh, bench/webhook-postgres.sh and
# bench/webhook-handoff.sh (sourced, from the repository root): the release build, a work
# dir removed on exit, the key file, starting and stopping a server pinned to
# $SERVER_CPU, a PostgreSQL server, and reading a process's CPU time and storage writes.
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}

# One command, so the examples share the binary's feature set and nothing builds twice.
# BENCH_BIN=DIR measures binaries built before (DIR/bridgectl, DIR/examples/...) instead,
# e.g. a copy of an older build to compare against.
if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN
else
    cargo build --release --quiet -p bridgectl -p bridgectl-webhook --features bridgectl-webhook/bench \
        --bin bridgectl --example webhook_bare --example webhook_load --example webhook_store \
        --example webhook_stages --example webhook_flood
    BIN=$CARGO_TARGET_DIR/release
fi
WORK=$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-bench.XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

export BENCH_SIGNING_KEY=bench-signing-key
HOOK=/hooks/bench
SUB=77
# The signing key the listener verifies against, in its 0600 key file.
umask 077
cat > "$WORK/keys.json" <<JSON
{"version": 1, "keys": {"$SUB": {"signingKey": "$BENCH_SIGNING_KEY", "chain": "ethereum", "network": "sepolia"}}}
JSON

# Starts a server in the background (its pid in $SERVER) and waits for its JSON first
# line; the address lands in $ADDR. (Not a $(...) subshell: the pid must reach `stop`.)
start() {
    local out=$WORK/server.out
    : > "$out"
    taskset -c "$SERVER_CPU" "$@" > "$out" 2>> "$WORK/server.err" &
    SERVER=$!
    PIDS+=("$SERVER")
    for _ in $(seq 200); do
        if [ -s "$out" ]; then
            ADDR=$(sed -n 's/.*"addr": *"\([^"]*\)".*/\1/p' "$out" | head -1)
            return
        fi
        sleep 0.05
    done
    echo "server did not start: $(cat "$WORK/server.err")" >&2
    exit 1
}
stop() {
    kill -TERM "$SERVER"
    wait "$SERVER" 2>/dev/null || true
}
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
# CPU ticks (user + system) and storage bytes written by a process so far.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
written() { awk '/^write_bytes/ { print $2 }' "/proc/$1/io"; }
HZ=$(getconf CLK_TCK)

# shellcheck source=bench/postgres-common.sh
. bench/postgres-common.sh
