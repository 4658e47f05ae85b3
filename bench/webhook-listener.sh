#!/usr/bin/env bash
# Webhook listener throughput and latency: `bridgectl webhook listen` (durable: SQLite WAL,
# synchronous=FULL, batched commits) against a bare axum handler that only answers 200,
# on the same machine with the same load generator (crates/flow/examples/webhook_load.rs:
# signed BLOCK_PERIOD deliveries, distinct sequence numbers, N keep-alive connections).
#
# Loopback only and bounded. Usage:
#   bench/webhook-listener.sh [REQUESTS=20000] [CONNECTIONS=64] [ROUNDS=3]
# The store goes in a fresh directory under ${BENCH_DIR:-/var/tmp} (use a real disk, not
# tmpfs, or fsync costs nothing). Prints one JSON line per run and a summary.
set -euo pipefail

REQUESTS=${1:-20000}
CONNECTIONS=${2:-64}
ROUNDS=${3:-3}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}

cargo build --release --quiet --bin bridgectl
cargo build --release --quiet -p bridgectl-flow --example webhook_bare --example webhook_load
BIN=$CARGO_TARGET_DIR/release
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
    "$@" > "$out" 2>> "$WORK/server.err" &
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

echo "# $(nproc) cores; store on $(df -T "$WORK" | awk 'NR==2 {print $2" "$1}'); $REQUESTS requests x $ROUNDS rounds, $CONNECTIONS connections"
declare -A RPS P50 P99
for kind in bare listener; do
    rps_all=()
    for round in $(seq "$ROUNDS"); do
        if [ "$kind" = bare ]; then
            start "$BIN/examples/webhook_bare" 127.0.0.1:0 "$HOOK"
        else
            rm -f "$WORK"/events.sqlite*
            start "$BIN/bridgectl" --json webhook listen --bind 127.0.0.1:0 --path "$HOOK" \
                --store "$WORK/events.sqlite" --keys "$WORK/keys.json"
        fi
        # A short warm-up on other sequence numbers, then the measured run.
        "$BIN/examples/webhook_load" "$ADDR" "$HOOK" 2000 "$CONNECTIONS" "$SUB" 1000000 > /dev/null
        line=$("$BIN/examples/webhook_load" "$ADDR" "$HOOK" "$REQUESTS" "$CONNECTIONS" "$SUB" 1)
        stop
        echo "$kind round $round: $line"
        ok=$(echo "$line" | field ok)
        if [ "$ok" != "$REQUESTS" ]; then
            echo "error: $kind answered 200 to $ok of $REQUESTS" >&2
            exit 1
        fi
        if [ "$kind" = listener ]; then
            stored=$("$BIN/bridgectl" --json webhook events --store "$WORK/events.sqlite" --limit 1000000 \
                | grep -c '"verified": true' || true)
            want=$((REQUESTS + 2000))
            if [ "$stored" != "$want" ]; then
                echo "error: $stored verified events stored, expected $want" >&2
                exit 1
            fi
        fi
        rps_all+=("$(echo "$line" | field rps) $(echo "$line" | field p50_ms) $(echo "$line" | field p99_ms)")
    done
    # The median round by throughput.
    median=$(printf '%s\n' "${rps_all[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p")
    read -r RPS[$kind] P50[$kind] P99[$kind] <<< "$median"
done

echo
printf '%-10s %10s %10s %10s\n' server req/s p50_ms p99_ms
for kind in bare listener; do
    printf '%-10s %10s %10s %10s\n' "$kind" "${RPS[$kind]}" "${P50[$kind]}" "${P99[$kind]}"
done
awk -v l="${RPS[listener]}" -v b="${RPS[bare]}" \
    'BEGIN { r = l / b; printf "listener/bare = %.2f (target >= 0.50): %s\n", r, (r >= 0.5 ? "met" : "NOT met") }'
