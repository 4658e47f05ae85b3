#!/usr/bin/env bash
# A stranger's flood against `bridgectl webhook listen` (release, default limits, SQLite):
# POSTS unsigned 255 KiB posts (half event-shaped, half not JSON, all distinct) over each
# of the given connection counts, while one genuine signed delivery is sent every 100 ms
# on a connection of its own (crates/webhook/examples/webhook_flood.rs). Reports the
# genuine deliveries' latency (the platform removes a webhook whose listener stops
# answering), how much the store grew, and whether the kernel dropped connections
# (listen-queue overflows and SYN retransmissions, machine-wide counters).
#
# The listener runs pinned to $SERVER_CPU and the flood to $LOAD_CPU (taskset). Connection
# counts above the listener's connection limit (256) exercise its backlog and the way it
# closes keep-alive connections while every slot is taken.
#
# Loopback only and bounded. Usage:
#   bench/webhook-flood.sh [POSTS=10000] [CONNECTIONS="64 512 1000"]
set -euo pipefail

POSTS=${1:-10000}
CONNECTION_COUNTS=${2:-64 512 1000}
cd "$(dirname "$0")/.."
# shellcheck source=bench/webhook-common.sh
. bench/webhook-common.sh

# Machine-wide TCP counters: listen-queue overflows and SYN retransmissions.
tcp_counter() {
    awk -v name="$1" 'NR % 2 == 1 { split($0, h) } NR % 2 == 0 { split($0, v); for (i in h) if (h[i] == name) print v[i] }' /proc/net/netstat
}
store_bytes() { du -cb "$WORK"/events.sqlite* 2>/dev/null | tail -1 | cut -f1; }

echo "# listener on cpu $SERVER_CPU, flood on cpu $LOAD_CPU (taskset); $POSTS posts of 255 KiB per run"
printf '%-6s %9s %9s %8s %8s %8s %8s %10s %11s %9s %8s\n' conns flood_ok flood_s MiB/s genuine p50_ms p99_ms max_ms store_MiB overflows syn_retx
for connections in $CONNECTION_COUNTS; do
    rm -f "$WORK"/events.sqlite*
    start "$BIN/bridgectl" --json webhook listen --quiet --bind 127.0.0.1:0 --path "$HOOK" \
        --store "$WORK/events.sqlite" --keys "$WORK/keys.json"
    before=$(store_bytes)
    overflows0=$(tcp_counter ListenOverflows)
    retx0=$(tcp_counter TCPSynRetrans)
    LINE=$(taskset -c "$LOAD_CPU" "$BIN/examples/webhook_flood" "$ADDR" "$HOOK" "$POSTS" "$connections" "$SUB" 100)
    overflows=$(($(tcp_counter ListenOverflows) - overflows0))
    retx=$(($(tcp_counter TCPSynRetrans) - retx0))
    stop
    echo "$connections connections: $LINE" >&2
    sent=$(echo "$LINE" | field genuine_sent)
    answered=$(echo "$LINE" | field genuine_ok)
    stored=$("$BIN/bridgectl" --json webhook events --store "$WORK/events.sqlite" --limit 1000000 \
        | grep -c '"verified": true' || true)
    if [ "$answered" != "$sent" ] || [ "$stored" != "$answered" ]; then
        echo "error: $sent genuine deliveries sent, $answered answered 200, $stored stored verified" >&2
        exit 1
    fi
    grown=$(awk -v a="$before" -v b="$(store_bytes)" 'BEGIN { printf "%.1f", (b - a) / 1048576 }')
    printf '%-6s %9s %9s %8s %8s %8s %8s %10s %11s %9s %8s\n' "$connections" \
        "$(echo "$LINE" | field flood_ok)" "$(echo "$LINE" | field flood_seconds)" \
        "$(echo "$LINE" | field flood_mib_per_s)" "$answered" \
        "$(echo "$LINE" | field genuine_p50_ms)" "$(echo "$LINE" | field genuine_p99_ms)" \
        "$(echo "$LINE" | field genuine_max_ms)" "$grown" "$overflows" "$retx"
done
echo "# unbounded, each run would have stored $((POSTS * 255 / 1024)) MiB"
