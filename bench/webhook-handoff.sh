#!/usr/bin/env bash
# The hand-off of two listener replicas on one PostgreSQL: `--exec` runs per second while
# deliveries arrive, for each --exec-jobs value, and the takeover time after a SIGKILL.
#
# Throughput: EVENTS signed BLOCK_PERIOD deliveries over SUBS subscriptions, sent in 10
# bursts one second apart (one load generator per subscription and burst, half of them
# to each replica), while both replicas run an --exec that waits EXEC_SLEEP seconds (a
# consumer waiting on its own I/O; 0: none) and appends a line. "while receiving" is
# the runs finished by the end of the last burst over the time since the first;
# "drained" is every run over the time from the first burst to the last run.
#
# Takeover: replica A runs an --exec that sleeps; A is SIGKILLed while it runs; the
# number is the seconds from the kill to the start of the marked re-run on replica B
# (the lease, renewed every second while A lived, then at most one poll of B).
#
# Pinning: PostgreSQL, the listeners and their children share $SERVER_CPU; the load
# generators run on $LOAD_CPU. Loopback only and bounded. Usage:
#   bench/webhook-handoff.sh [EVENTS=4000] [SUBS=8] [JOBS="1 8"] [EXEC_SLEEP=0]
set -euo pipefail

EVENTS=${1:-4000}
SUBS=${2:-8}
JOBS=${3:-"1 8"}
EXEC_SLEEP=${4:-0}
cd "$(dirname "$0")/.."
# shellcheck source=bench/webhook-common.sh
. bench/webhook-common.sh

# One key per subscription (all the same: the load generator signs with one).
{
    printf '{"version": 1, "keys": {'
    for s in $(seq "$SUBS"); do
        [ "$s" = 1 ] || printf ','
        printf '"%d": {"signingKey": "%s", "chain": "ethereum", "network": "sepolia"}' \
            $((100 + s)) "$BENCH_SIGNING_KEY"
    done
    printf '}}\n'
} > "$WORK/keys.json"

start_postgres
now() { date +%s.%N; }
listen() { # EXEC [FLAGS...]
    local exec=$1
    shift
    start "$BIN/bridgectl" --json webhook listen --quiet --bind 127.0.0.1:0 --path "$HOOK" \
        --store "$URL" --keys "$WORK/keys.json" --exec "$exec" "$@"
}
runs() { wc -l < "$WORK/runs" 2>/dev/null || echo 0; }

echo "# postgres, 2 replicas and their --exec on cpu $SERVER_CPU, load on cpu $LOAD_CPU;" \
    "$EVENTS events over $SUBS subscriptions, each --exec sleeping ${EXEC_SLEEP}s"
NEXT=1
for jobs in $JOBS; do
    : > "$WORK/runs"
    run="sleep $EXEC_SLEEP; echo x >> $WORK/runs"
    listen "$run" --exec-jobs "$jobs"; A=$ADDR; SA=$SERVER
    listen "$run" --exec-jobs "$jobs"; B=$ADDR; SB=$SERVER
    burst=$((EVENTS / SUBS / 10))
    per=$((burst * 10))
    t0=$(now)
    for b in $(seq 10); do
        loads=()
        for s in $(seq "$SUBS"); do
            addr=$A
            [ $((s % 2)) = 0 ] && addr=$B
            taskset -c "$LOAD_CPU" "$BIN/examples/webhook_load" "$addr" "$HOOK" "$burst" 4 \
                $((100 + s)) $((NEXT + (b - 1) * burst)) > /dev/null &
            loads+=($!)
        done
        wait "${loads[@]}"
        # The next burst a second after this one started.
        sleep "$(awk -v t0="$t0" -v b="$b" -v t="$(now)" 'BEGIN { d = t0 + b - t; print (d > 0 ? d : 0) }')"
    done
    t1=$(now)
    during=$(runs)
    total=$((per * SUBS))
    for _ in $(seq 6000); do [ "$(runs)" -ge "$total" ] && break; sleep 0.05; done
    t2=$(now)
    NEXT=$((NEXT + per))
    awk -v j="$jobs" -v n="$total" -v d="$during" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v r="$(runs)" \
        'BEGIN { printf "--exec-jobs %s: %d deliveries in %.1f s; while receiving %.0f runs/s (%d run); drained %d runs in %.1f s (%.0f runs/s)\n", j, n, t1 - t0, d / (t1 - t0), d, r, t2 - t0, r / (t2 - t0) }'
    kill -TERM "$SA" "$SB"; wait "$SA" "$SB" 2>/dev/null || true
done

# Takeover: A alone takes the event (so it is A's), B starts, A is killed mid-run.
rm -f "$WORK/first" "$WORK/rerun"
slow="if [ \"\$BRIDGECTL_RERUN\" = 1 ]; then date +%s.%N > $WORK/rerun; else touch $WORK/first; sleep 60; fi"
listen "$slow"; A=$ADDR; SA=$SERVER
taskset -c "$LOAD_CPU" "$BIN/examples/webhook_load" "$A" "$HOOK" 1 1 101 $((NEXT + 1000000)) > /dev/null
for _ in $(seq 200); do [ -e "$WORK/first" ] && break; sleep 0.05; done
listen "$slow"; SB=$SERVER
sleep 1
killed=$(now)
kill -KILL "$SA"
{ wait "$SA"; } 2>/dev/null || true
for _ in $(seq 1200); do [ -s "$WORK/rerun" ] && break; sleep 0.05; done
awk -v k="$killed" -v r="$(cat "$WORK/rerun" 2>/dev/null || echo 0)" \
    'BEGIN { if (r == 0) print "takeover: no re-run within 60 s"; else printf "takeover: the marked re-run started %.2f s after the SIGKILL\n", r - k }'
kill -TERM "$SB"; wait "$SB" 2>/dev/null || true
