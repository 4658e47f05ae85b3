#!/usr/bin/env bash
# The journal shared by signer hosts: `bridgectl batch run` of ITEMS redeems across KEYS
# keys (release build, the sandbox on loopback), three ways, in one run:
#
#  1. one host, the journal in SQLite (the default; the baseline);
#  2. one host, the journal in PostgreSQL (BRIDGECTL_STATE_URL; the pinned server from
#     tools/, a fresh data dir, 127.0.0.1);
#  3. two hosts on that PostgreSQL at once (own keystore copies, own XDG dirs), each
#     given half of the keys' items as a batch of its own.
#
# Reports items/s of each (two hosts: all items over the longer of the two runs) and the
# wall milliseconds PostgreSQL adds per item against SQLite. Checked on chain: the
# side chain's Redeem logs of the keys are 3 x ITEMS. Pinning: PostgreSQL on $SERVER_CPU,
# the rest free. Usage: bench/shared-journal.sh [ITEMS=1000] [KEYS=10] [JOBS=8]
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS="${1:-1000}"
KEYS="${2:-10}"
JOBS="${3:-8}"
SERVER_CPU=${SERVER_CPU:-0}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}
make -s tools
# BIN=/path/to/bridgectl measures a build made before (e.g. `make release`'s) instead.
if [ -z "${BIN:-}" ]; then
    cargo build --release -q --bin bridgectl
    BIN=$CARGO_TARGET_DIR/release/bridgectl
fi
WORK="$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-shared.XXXXXX")"
work=$WORK
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "${sb_pid:-}" ] && kill "$sb_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=bench/sandbox-common.sh
. bench/sandbox-common.sh
# shellcheck source=bench/postgres-common.sh
. bench/postgres-common.sh
start_sandbox
start_postgres
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$work/sandbox.json" "$1"; }
BASE=$(field baseUrl)
TOKEN_FILE="$work/config.toml.token"
SIDE_RPC=$(field side.rpcUrl)
ST=$(field side.tokenAddress)
export BRIDGECTL_KEYSTORE="$work/keystore" BRIDGECTL_JOURNAL="$work/journal.sqlite3"
echo "bench-passphrase-$$" >"$work/pass"; chmod 600 "$work/pass"
export BRIDGECTL_PASSPHRASE_FILE="$work/pass"
echo "# $(nproc) cores; $ITEMS items across $KEYS keys per run, --jobs $JOBS; PostgreSQL on cpu $SERVER_CPU"
new_payers "$KEYS"
# Files: one per run; the two hosts' files split the keys in halves (a key's nonces are
# one host's in a run, as a desk would deal them out).
python3 - "$work" "$ITEMS" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
payers = open(f"{work}/payers").read().split()
half = len(payers) // 2 or 1
def write(name, keys, prefix, count):
    with open(f"{work}/{name}", "w") as f:
        for k in range(count):
            f.write(json.dumps({"op": "redeem", "from": keys[k % len(keys)], "amount": "0.001", "id": f"{prefix}{k}"}) + "\n")
write("sqlite.jsonl", payers, "s", n)
write("pg1.jsonl", payers, "p", n)
write("pg2a.jsonl", payers[:half], "a", n // 2)
write("pg2b.jsonl", payers[half:], "b", n - n // 2)
PY
cp -a "$work/keystore" "$work/keystore-b"

# Runs a batch; prints its wall seconds.
run() { # FILE [ENV...]
    local file=$1; shift
    local start end
    start=$(date +%s%N)
    env "$@" "$BIN" --json batch run "$work/$file" --yes --jobs "$JOBS" >"$work/$file.out" 2>"$work/$file.err" \
        || { echo "batch $file failed:"; tail -3 "$work/$file.err"; exit 1; }
    end=$(date +%s%N)
    python3 -c "print(round(($end - $start) / 1e9, 3))"
}
s1=$(run sqlite.jsonl)
echo "one host, SQLite:      $(python3 -c "print(round($ITEMS / $s1, 1))") items/s ($s1 s)"
s2=$(run pg1.jsonl BRIDGECTL_STATE_URL="$URL" BRIDGECTL_HOST=a)
echo "one host, PostgreSQL:  $(python3 -c "print(round($ITEMS / $s2, 1))") items/s ($s2 s)"
( run pg2a.jsonl BRIDGECTL_STATE_URL="$URL" BRIDGECTL_HOST=a >"$work/a.s" ) &
a_pid=$!
run pg2b.jsonl BRIDGECTL_STATE_URL="$URL" BRIDGECTL_HOST=b BRIDGECTL_KEYSTORE="$work/keystore-b" \
    XDG_STATE_HOME="$work/b-state" >"$work/b.s"
wait "$a_pid"
s3=$(python3 -c "print(max($(cat "$work/a.s"), $(cat "$work/b.s")))")
echo "two hosts, PostgreSQL: $(python3 -c "print(round($ITEMS / $s3, 1))") items/s (a $(cat "$work/a.s") s, b $(cat "$work/b.s") s)"
echo "PostgreSQL adds $(python3 -c "print(round(($s2 - $s1) * 1000 / $ITEMS, 2))") ms of wall time per item on one host (loopback)"
logs=$(python3 - "$SIDE_RPC" "$ST" "$work/payers" <<'PY'
import json, sys, urllib.request
url, token, payers = sys.argv[1], sys.argv[2], [p.lower() for p in open(sys.argv[3]).read().split()]
req = lambda m, p: json.load(urllib.request.urlopen(urllib.request.Request(url, json.dumps({"jsonrpc": "2.0", "id": 1, "method": m, "params": p}).encode(), {"content-type": "application/json"})))["result"]
logs = req("eth_getLogs", [{"address": token, "fromBlock": "0x0", "toBlock": "latest"}])
print(sum(1 for l in logs if len(l["topics"]) == 2 and "0x" + l["topics"][1][-40:] in payers))
PY
)
echo "Redeem logs of the keys on chain: $logs (expected $((3 * ITEMS)))"
