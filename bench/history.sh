#!/usr/bin/env bash
# `bridgectl history --limit 5` against journals of 0, 3,000 and 100,000 flows (issue
# 53: every command flat in the journal's size), with the journal's index of creation
# times (schema 8) and, as the baseline in the same run, with it dropped (the query plan
# before: every flow read and sorted). Flows are written straight into the journal with
# sqlite3; each figure is the median wall time of 15 runs of the release binary.
#
#   bench/history.sh                      # `make release`'s binary
#   BIN=path/to/bridgectl bench/history.sh
#   SIZES="0 3000 100000" bench/history.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}"
BIN="${BIN:-$(make -s release | tail -n 1)}"
command -v sqlite3 >/dev/null || { echo "sqlite3 is required: apt-get install -y sqlite3" >&2; exit 1; }
dir=$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-history.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export HOME=$dir XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state
intent='{"intent":{"function":"redeem","to":"0x5757575757575757575757575757575757575757","chainId":1337,"inputs":{"_amount":"1000000000000000000"}},"amount":"1000000000000000000"}'
median_ms() { # the median of 15 runs against journal $1
  for _ in $(seq 15); do
    s=$(date +%s%N); "$BIN" history --limit 5 --journal "$1" >/dev/null 2>&1; e=$(date +%s%N)
    echo $(((e - s) / 1000))
  done | sort -n | sed -n 8p | awk '{printf "%.2f", $1 / 1000}'
}
printf '%8s %12s %16s\n' flows "index, ms" "no index, ms"
for n in ${SIZES:-0 3000 100000}; do
  j=$dir/journal-$n.sqlite3
  "$BIN" history --limit 5 --journal "$j" >/dev/null 2>&1 # creates it, schema and all
  sqlite3 "$j" "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < $n - 1)
    INSERT INTO flows (tx_id, kind, state, from_addr, intent, created_at, updated_at)
    SELECT printf('%064x', i), 'redeem', 'completed',
           '0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F', '$intent',
           strftime('%Y-%m-%dT%H:%M:%SZ', 1700000000 + i, 'unixepoch'),
           strftime('%Y-%m-%dT%H:%M:%SZ', 1700000000 + i, 'unixepoch')
      FROM c WHERE $n > 0;"
  with=$(median_ms "$j")
  cp "$j" "$j.before"
  sqlite3 "$j.before" "DROP INDEX flows_by_created;"
  without=$(median_ms "$j.before")
  printf '%8s %12s %16s\n' "$n" "$with" "$without"
done
