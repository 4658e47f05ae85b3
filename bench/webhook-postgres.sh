#!/usr/bin/env bash
# The webhook listener on PostgreSQL: one replica, then two replicas on one database
# (`--store postgres://...`), each with the same signed BLOCK_PERIOD load as
# bench/webhook-listener.sh. PostgreSQL is the pinned server from tools/ (`make tools`),
# in a fresh data dir under ${BENCH_DIR:-/var/tmp}, on 127.0.0.1, stopped on exit.
#
# Pinning: PostgreSQL and the listener(s) share $SERVER_CPU; the load generator(s) run on
# $LOAD_CPU. With two replicas each gets half the connections and its own sequence range;
# events/s is the total over the longer of the two runs, p99 the larger of the two.
#
# Loopback only and bounded. Usage:
#   bench/webhook-postgres.sh [REQUESTS=20000] [CONNECTIONS=64] [ROUNDS=3]
set -euo pipefail

REQUESTS=${1:-20000}
CONNECTIONS=${2:-64}
ROUNDS=${3:-3}
cd "$(dirname "$0")/.."
# shellcheck source=bench/webhook-common.sh
. bench/webhook-common.sh

start_postgres

echo "# postgres and listeners on cpu $SERVER_CPU, load on cpu $LOAD_CPU; $REQUESTS requests x $ROUNDS rounds, $CONNECTIONS connections"
NEXT=1
listen() {
    # --quiet: no line per delivery, as measured before the listener printed them.
    start "$BIN/bridgectl" --json webhook listen --quiet --bind 127.0.0.1:0 --path "$HOOK" \
        --store "$URL" --keys "$WORK/keys.json"
}
load() { # ADDR REQUESTS CONNECTIONS FIRST_SEQ
    taskset -c "$LOAD_CPU" "$BIN/examples/webhook_load" "$1" "$HOOK" "$2" "$3" "$SUB" "$4"
}
for round in $(seq "$ROUNDS"); do
    # One replica.
    listen; A=$ADDR; SA=$SERVER
    load "$A" 2000 "$CONNECTIONS" $((NEXT + 10000000)) > /dev/null
    LINE=$(load "$A" "$REQUESTS" "$CONNECTIONS" "$NEXT")
    NEXT=$((NEXT + REQUESTS))
    echo "one replica, round $round: $LINE"
    kill -TERM "$SA"; wait "$SA" 2>/dev/null || true
    # Two replicas, half the connections and half the requests each.
    listen; A=$ADDR; SA=$SERVER
    listen; B=$ADDR; SB=$SERVER
    HALF=$((REQUESTS / 2)); HC=$((CONNECTIONS / 2))
    load "$A" "$HALF" "$HC" "$NEXT" > "$WORK/a.json" &
    LA=$!
    load "$B" "$HALF" "$HC" $((NEXT + HALF)) > "$WORK/b.json"
    wait "$LA"
    NEXT=$((NEXT + REQUESTS))
    a=$(cat "$WORK/a.json"); b=$(cat "$WORK/b.json")
    echo "two replicas, round $round: A $a"
    echo "two replicas, round $round: B $b"
    awk -v n="$REQUESTS" -v sa="$(echo "$a" | field seconds)" -v sb="$(echo "$b" | field seconds)" \
        -v pa="$(echo "$a" | field p99_ms)" -v pb="$(echo "$b" | field p99_ms)" \
        'BEGIN { s = (sa > sb ? sa : sb); p = (pa > pb ? pa : pb); printf "two replicas, round %d: %.0f events/s, p99 %.2f ms\n", '"$round"', n / s, p }'
    kill -TERM "$SA" "$SB"; wait "$SA" "$SB" 2>/dev/null || true
done
stored=$("$BIN/bridgectl" --json webhook events --store "$URL" --limit 10000000 | grep -c '"verified": true' || true)
echo "verified events stored: $stored (expected $(( (REQUESTS * 2 + 2000) * ROUNDS )))"
