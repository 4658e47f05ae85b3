#!/usr/bin/env bash
# Webhook listener throughput and latency: `bridgectl webhook listen` (durable: SQLite WAL,
# synchronous=FULL, batched commits) against a bare axum handler that only answers 200,
# on the same machine with the same load generator (crates/webhook/examples/webhook_load.rs:
# signed BLOCK_PERIOD deliveries, distinct sequence numbers, N keep-alive connections).
#
# The server runs pinned to one core and the load generator to the other (taskset), so
# the two do not steal each other's CPU; for each run the server's CPU time per event
# (from /proc/PID/stat) and the bytes it wrote to storage per event (/proc/PID/io) are
# reported beside req/s.
#
# Loopback only and bounded. Usage:
#   bench/webhook-listener.sh [REQUESTS=20000] [CONNECTIONS=64] [ROUNDS=5]
# (BENCH_BIN=DIR measures binaries built before instead of building; see webhook-common.sh.)
# The summary: req/s, p50/p99 and CPU us per event for each server, the listener/bare
# ratio (the median of per-round ratios), CPU us per event by stage and WAL bytes per event.
# SERVER_CPU / LOAD_CPU choose the cores (default 0 and 1).
# The store goes in a fresh directory under ${BENCH_DIR:-/var/tmp} (use a real disk, not
# tmpfs, or fsync costs nothing). Prints one JSON line per run and a summary.
set -euo pipefail

REQUESTS=${1:-20000}
CONNECTIONS=${2:-64}
ROUNDS=${3:-5}
cd "$(dirname "$0")/.."
# shellcheck source=bench/webhook-common.sh
. bench/webhook-common.sh

echo "# server on cpu $SERVER_CPU, load generator on cpu $LOAD_CPU (taskset)"
echo "# $(nproc) cores; store on $(df -T "$WORK" | awk 'NR==2 {print $2" "$1}'); $REQUESTS requests x $ROUNDS rounds, $CONNECTIONS connections"

# One measured run of server $1 (bare | listener); its JSON line lands in $LINE.
measure() {
    local kind=$1
    if [ "$kind" = bare ]; then
        start "$BIN/examples/webhook_bare" 127.0.0.1:0 "$HOOK"
    elif [ "$kind" = serve ]; then
        start "$BIN/examples/webhook_bare" 127.0.0.1:0 "$HOOK" serve
    elif [ "$kind" = verify ]; then
        start "$BIN/examples/webhook_bare" 127.0.0.1:0 "$HOOK" verify "$WORK/keys.json"
    else
        rm -f "$WORK"/events.sqlite*
        # --quiet: no line per delivery, as measured before the listener printed them.
        start "$BIN/bridgectl" --json webhook listen --quiet --bind 127.0.0.1:0 --path "$HOOK" \
            --store "$WORK/events.sqlite" --keys "$WORK/keys.json"
    fi
    # A short warm-up on other sequence numbers, then the measured run.
    taskset -c "$LOAD_CPU" "$BIN/examples/webhook_load" "$ADDR" "$HOOK" 2000 "$CONNECTIONS" "$SUB" 1000000 > /dev/null
    local t0 w0 t1 w1
    t0=$(ticks "$SERVER"); w0=$(written "$SERVER")
    LINE=$(taskset -c "$LOAD_CPU" "$BIN/examples/webhook_load" "$ADDR" "$HOOK" "$REQUESTS" "$CONNECTIONS" "$SUB" 1)
    t1=$(ticks "$SERVER"); w1=$(written "$SERVER")
    CPU_US=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v n="$REQUESTS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / hz / n }')
    BYTES=$(awk -v a="$w0" -v b="$w1" -v n="$REQUESTS" 'BEGIN { printf "%.0f", (b - a) / n }')
    LINE="${LINE%\}}, \"cpu_us_per_event\": $CPU_US, \"bytes_written_per_event\": $BYTES}"
    stop
    local ok
    ok=$(echo "$LINE" | field ok)
    if [ "$ok" != "$REQUESTS" ]; then
        echo "error: $kind answered 200 to $ok of $REQUESTS" >&2
        exit 1
    fi
    if [ "$kind" = listener ]; then
        local stored want=$((REQUESTS + 2000))
        stored=$("$BIN/bridgectl" --json webhook events --store "$WORK/events.sqlite" --limit 1000000 \
            | grep -c '"verified": true' || true)
        if [ "$stored" != "$want" ]; then
            echo "error: $stored verified events stored, expected $want" >&2
            exit 1
        fi
    fi
}

# The speed of this (virtual) machine drifts by tens of percent from one second to the
# next, so each round measures both servers back to back (alternating which goes first)
# and the verdict is the median of the per-round ratios, not a ratio of two medians taken
# minutes apart.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A RUNS
RATIOS=()
for round in $(seq "$ROUNDS"); do
    order="bare serve verify listener"
    if [ $((round % 2)) = 0 ]; then order="listener verify serve bare"; fi
    declare -A rps=()
    for kind in $order; do
        measure "$kind"
        echo "$kind round $round: $LINE"
        rps[$kind]=$(echo "$LINE" | field rps)
        RUNS[$kind]+="$(echo "$LINE" | field rps) $(echo "$LINE" | field p50_ms) $(echo "$LINE" | field p99_ms) $CPU_US $BYTES"$'\n'
    done
    RATIOS+=("$(awk -v l="${rps[listener]}" -v b="${rps[bare]}" 'BEGIN { printf "%.3f", l / b }')")
done

echo
printf '%-10s %10s %10s %10s %12s %14s   (medians over %s rounds)\n' server req/s p50_ms p99_ms cpu_us/event written_B/event "$ROUNDS"
for kind in bare serve verify listener; do
    col() { printf '%s' "${RUNS[$kind]}" | awk -v c="$1" 'NF { print $c }' | median; }
    printf '%-10s %10s %10s %10s %12s %14s\n' "$kind" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)"
done
# The store's writer alone, without HTTP: durable inserts of the same events by
# $CONNECTIONS tasks, 2 rounds (the second into a WAL that has its size), the writer's
# stages timed; and the CPU cost of parsing and verifying one delivery, stage by stage.
BRIDGECTL_BENCH_STAGES=1 taskset -c "$SERVER_CPU" "$BIN/examples/webhook_store" "$WORK/writer.sqlite" \
    "$REQUESTS" "$CONNECTIONS" 2 > "$WORK/writer.out"
WRITER=$(tail -1 "$WORK/writer.out")
echo "writer alone: $WRITER"
STAGES=$(taskset -c "$SERVER_CPU" "$BIN/examples/webhook_stages" 50000)
echo "parse/verify alone: $STAGES"
cpu() { printf '%s' "${RUNS[$1]}" | awk 'NF { print $4 }' | median; }
written() { printf '%s' "${RUNS[$1]}" | awk 'NF { print $5 }' | median; }
awk -v b="$(cpu bare)" -v s="$(cpu serve)" -v v="$(cpu verify)" -v l="$(cpu listener)" \
    -v parse="$(echo "$STAGES" | field parse_us)" -v sha="$(echo "$STAGES" | field sha256_us)" \
    -v hmac="$(echo "$STAGES" | field hmac_verify_us)" \
    -v w="$(echo "$WRITER" | field cpu_us_per_event)" -v ins="$(echo "$WRITER" | field insert_us)" \
    -v com="$(echo "$WRITER" | field commit_us)" -v wal="$(echo "$WRITER" | field wal_bytes_per_event)" \
    -v disk="$(written listener)" 'BEGIN {
    printf "CPU us per event by stage (medians):\n"
    printf "  HTTP (bare axum)                        %6.1f\n", b
    printf "  the listener accept loop instead        %6.1f\n", s - b
    printf "  parse+verify in the listener router    %6.1f   (alone, cache-warm: parse %.1f, sha256 %.1f, hmac %.1f)\n", v - s, parse, sha, hmac
    printf "  store: hand-off+insert+commit/fsync     %6.1f   (writer alone %.1f: insert %.1f, commit/fsync %.1f, hand-off+checkpoint %.1f)\n", l - v, w, ins, com, w - ins - com
    printf "  listener total                          %6.1f   (bare x %.2f)\n", l, l / b
    printf "WAL bytes per event: %d (writer alone); bytes written to disk per event by the listener (WAL + checkpoint): %d\n", wal, disk
}'
ratio=$(printf '%s\n' "${RATIOS[@]}" | median)
echo "per-round listener/bare: ${RATIOS[*]}"
awk -v r="$ratio" \
    'BEGIN { printf "listener/bare = %.2f, median of rounds (target >= 0.50): %s\n", r, (r >= 0.5 ? "met" : "NOT met") }'
