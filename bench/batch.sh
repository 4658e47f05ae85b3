#!/usr/bin/env bash
# Batches at full scale on the sandbox (release build, loopback only, stops by itself):
#
#  1. `bridgectl batch run` of ITEMS redeems across KEYS keys (default KDF cost: each key
#     unlocked once, timed), with the platform tampering with item 500 only: it must be
#     refused and reported failed without stopping the others; `batch resume` then runs
#     it with the platform honest. Checked on chain: ST burned and MT paid equal the sum
#     of the items exactly.
#  2. The same items as a loop of single `bridgectl redeem` (LOOP_N of them, the rate
#     extrapolates; a thousand would take many minutes).
#  3. The bare flood: the same number of pre-signed redeems posted straight to the submit
#     operation and awaited (crates/flow/examples/redeem_flood.rs).
#  4. Crash safety: a second batch of ITEMS redeems, each with its own amount, SIGKILLed at
#     KILLS random moments and resumed each time, then resumed to the end; the chain's
#     Redeem logs must be exactly the items: no duplicate, none lost.
#
# Reports items/s, p50/p99 per-item latency (its work started -> its result) and where the
# time goes. Usage: bench/batch.sh [ITEMS=1000] [KEYS=20] [JOBS=8] [LOOP_N=30] [KILLS=20]
# BIN=/path/to/another/bridgectl runs the same batches with another build (a before/after).
# PERF=FILE records batch 1's client with `perf record` into FILE, for `perf report`
# (its CPU figure then includes perf's own: take the numbers from a run without it).
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS="${1:-1000}"
KEYS="${2:-20}"
JOBS="${3:-8}"
LOOP_N="${4:-30}"
KILLS="${5:-20}"
make -s tools
cargo build --release -q
cargo build --release -q -p bridgectl-flow --example redeem_flood
TARGET="${CARGO_TARGET_DIR:-target}/release"
BIN="${BIN:-$TARGET/bridgectl}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-batch.XXXXXX")"
cleanup() { [ -n "${sb_pid:-}" ] && kill "$sb_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# shellcheck source=bench/sandbox-common.sh
. bench/sandbox-common.sh
start_sandbox
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$work/sandbox.json" "$1"; }
BASE=$(field baseUrl)
TOKEN_FILE="$work/config.toml.token"
SIDE_RPC=$(field side.rpcUrl)
ST=$(field side.tokenAddress)
MAIN_RPC=$(field main.rpcUrl)
MT=$(field main.tokenAddress)

export BRIDGECTL_KEYSTORE="$work/keystore" BRIDGECTL_JOURNAL="$work/journal.sqlite3"
echo "bench-passphrase-$$" >"$work/pass"; chmod 600 "$work/pass"
export BRIDGECTL_PASSPHRASE_FILE="$work/pass"
# CPU seconds (user + system) of the sandbox process and its anvil children, so each
# phase can say where the time went: client, platform (sandbox + relayer), chains.
HZ=$(getconf CLK_TCK)
cpu_of() { # PID... -> seconds
    local total=0 p
    for p in "$@"; do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    python3 -c "print(round($total / $HZ, 2))"
}
server_cpu() { cpu_of "$sb_pid"; }
chains_cpu() { cpu_of $(pgrep -P "$sb_pid" anvil); }
# Runs a command, printing its own CPU seconds (user + system) on fd 3.
timed() { python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(round(u.ru_utime + u.ru_stime, 2), file=open("/dev/fd/3", "w"))
sys.exit(rc)' "$@"; }
echo "# $(nproc) cores; $ITEMS items across $KEYS keys, --jobs $JOBS; default KDF cost"
# Keys at the default KDF cost, each funded with enough ST for both batches and the loop.
new_payers "$KEYS"

# Items: redeems round robin over the payers; item 500 (batch 1) has an amount of its
# own, the one the platform tampers with.
python3 - "$work" "$ITEMS" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
hostile = 500 if n > 500 else n // 2
payers = open(f"{work}/payers").read().split()
with open(f"{work}/batch1.jsonl", "w") as f:
    for k in range(n):
        amount = "0.0015" if k == hostile else "0.001"
        f.write(json.dumps({"op": "redeem", "from": payers[k % len(payers)], "amount": amount, "id": f"a{k}"}) + "\n")
with open(f"{work}/batch2.jsonl", "w") as f:
    for k in range(n):
        # 0.001000000 + k nano-ST: every item's amount is its own, so the chain's logs
        # say which item each redemption was.
        f.write(json.dumps({"op": "redeem", "from": payers[k % len(payers)], "amount": f"0.001{k:06d}", "id": f"b{k}"}) + "\n")
PY

# Chain reads (JSON-RPC, loopback).
chain_py() { python3 - "$@" <<'PY'
import json, sys, urllib.request
def rpc(url, method, params):
    req = urllib.request.Request(url, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode(), {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))["result"]
what, url, token = sys.argv[1], sys.argv[2], sys.argv[3]
payers = open(sys.argv[4]).read().split()
if what == "balances":
    total = 0
    for p in payers:
        data = "0x70a08231" + p[2:].lower().rjust(64, "0")
        total += int(rpc(url, "eth_call", [{"to": token, "data": data}, "latest"]), 16)
    print(total)
elif what == "redeems":
    logs = rpc(url, "eth_getLogs", [{"address": token, "fromBlock": sys.argv[5], "toBlock": "latest", "topics": [sys.argv[6]]}])
    pairs = sorted(("0x" + l["topics"][1][-40:], int(l["data"][2:66], 16)) for l in logs)
    pairs = [p for p in pairs if p[0] in [x.lower() for x in payers]]
    print(json.dumps(pairs))
PY
}
REDEEM_TOPIC=$(tools/node_modules/.bin/cast keccak "Redeem(address,uint256)" 2>/dev/null || true)
[ -n "$REDEEM_TOPIC" ] || { echo "cannot compute the Redeem topic with the pinned cast" >&2; exit 1; }

# 1. The batch, with item 500 tampered with by the platform.
st0=$(chain_py balances "$SIDE_RPC" "$ST" "$work/payers")
mt0=$(chain_py balances "$MAIN_RPC" "$MT" "$work/payers")
sandbox_post /sandbox/v1/hostile '{"kind": "other-amount", "input": "1500000000000000"}'
s0=$(server_cpu); c0=$(chains_cpu)
start=$(date +%s%N)
set +e
profiler=()
[ -z "${PERF:-}" ] || profiler=(perf record -q -F 999 -g -o "$PERF" --)
timed "${profiler[@]}" "$BIN" --json batch run "$work/batch1.jsonl" --yes --jobs "$JOBS" >"$work/run1.jsonl" 2>"$work/run1.err" 3>"$work/run1.cpu"
rc=$?
set -e
end=$(date +%s%N)
echo "$(cat "$work/run1.cpu") $(python3 -c "print(round($(server_cpu) - $s0, 2), round($(chains_cpu) - $c0, 2))")" >"$work/cpu1"
echo "batch run: exit $rc in $(( (end - start) / 1000000 )) ms (unlock: $(grep -o '[0-9.]* s$' "$work/run1.err" | head -1))"
sandbox_post /sandbox/v1/hostile '{"kind": null}'
id1=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    v=json.loads(l)
    if "summary" in v: print(v["summary"]["batchId"])' "$work/run1.jsonl")
"$BIN" --json batch resume "$id1" --yes >"$work/resume1.jsonl" 2>"$work/resume1.err"
st1=$(chain_py balances "$SIDE_RPC" "$ST" "$work/payers")
mt1=$(chain_py balances "$MAIN_RPC" "$MT" "$work/payers")

# 2. A loop of single redeems.
payer0=$(head -1 "$work/payers")
start=$(date +%s%N)
for _ in $(seq "$LOOP_N"); do
    "$BIN" --json redeem --from "$payer0" --amount 0.001 --yes >/dev/null 2>&1
done
end=$(date +%s%N)
loop_ms=$(( (end - start) / 1000000 ))

# 3. The bare flood.
s0=$(server_cpu); c0=$(chains_cpu)
timed "$TARGET/examples/redeem_flood" "$work/sandbox.json" "$ITEMS" "$KEYS" 1000000000000000 >"$work/flood.json" 3>"$work/flood.cpu"
echo "$(cat "$work/flood.cpu") $(python3 -c "print(round($(server_cpu) - $s0, 2), round($(chains_cpu) - $c0, 2))")" >"$work/cpuf"

# 4. Crash safety: batch 2 killed at KILLS random moments, resumed each time.
from_block=$(python3 -c 'import json,sys,urllib.request
r=urllib.request.Request(sys.argv[1], json.dumps({"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}).encode(), {"content-type":"application/json"})
print(json.load(urllib.request.urlopen(r))["result"])' "$SIDE_RPC")
n_batches() { "$BIN" --json batch status | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
before=$(n_batches)
"$BIN" --json batch run "$work/batch2.jsonl" --yes --jobs "$JOBS" >"$work/run2.jsonl" 2>"$work/run2.err" &
pid=$!
# The kills start once the batch is recorded (after its keys are unlocked).
until [ "$(n_batches)" -gt "$before" ]; do sleep 0.2; done
signed_at_kill=0
for k in $(seq "$KILLS"); do
    sleep "$(python3 -c 'import random; print(round(random.uniform(0.3, 2.5), 3))')"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    id2=$("$BIN" --json batch status | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["batchId"])')
    n_signed=$("$BIN" --json batch status "$id2" | python3 -c 'import json,sys; print(sum(1 for i in json.load(sys.stdin)["items"] if i["state"] == "signed"))')
    [ "$n_signed" -gt 0 ] && signed_at_kill=$((signed_at_kill + 1))
    "$BIN" --json batch resume "$id2" --yes >>"$work/run2.jsonl" 2>>"$work/run2.err" &
    pid=$!
done
wait "$pid" || true
"$BIN" --json batch resume "$id2" --yes >"$work/final2.jsonl" 2>"$work/final2.err"
chain_py redeems "$SIDE_RPC" "$ST" "$work/payers" "$from_block" "$REDEEM_TOPIC" >"$work/redeems2.json"

python3 - "$work" "$ITEMS" "$LOOP_N" "$loop_ms" "$rc" "$st0" "$st1" "$mt0" "$mt1" "$KILLS" "$signed_at_kill" <<'PY'
import json, statistics, sys
work, n, loop_n, loop_ms, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
st0, st1, mt0, mt1 = (int(x) for x in sys.argv[6:10])
kills, signed_at_kill = int(sys.argv[10]), int(sys.argv[11])
def lines(path):
    items, summary = [], None
    for l in open(path):
        v = json.loads(l)
        if "summary" in v: summary = v["summary"]
        # (the run's closing error line, when it exits non-zero, is neither)
        elif "status" in v: items.append(v)
    return items, summary
items, s = lines(f"{work}/run1.jsonl")
failed = [i for i in items if i["status"] != "completed"]
hostile = 500 if n > 500 else n // 2
assert rc == 9 and [i["id"] for i in failed] == [f"a{hostile}"], (rc, failed[:3])
assert "_amount" in failed[0]["error"], failed[0]
_, r = lines(f"{work}/resume1.jsonl")
assert r["completed"] == n, r
expected = (n - 1) * 10**15 + 15 * 10**14
assert st0 - st1 == expected, ("ST burned", st0 - st1, expected)
assert mt1 - mt0 == expected, ("MT paid", mt1 - mt0, expected)
lat = sorted(i["latencyMs"] for i in items if i.get("latencyMs") is not None)
p = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))]
batch_rate = s["itemsPerSecond"]
loop_rate = loop_n / (loop_ms / 1000)
flood = json.load(open(f"{work}/flood.json"))
print(f"batch:  {s['items']} items in {s['seconds']:.1f} s = {batch_rate:.1f} items/s, latency p50 {p(.5)} ms p99 {p(.99)} ms; item {hostile} refused ({failed[0]['error'][:60]}...), the other {n-1} completed; resume finished it")
print(f"        on chain: ST burned {st0-st1} = MT paid {mt1-mt0} = sum of the items {expected}")
print(f"loop:   {loop_n} single redeems in {loop_ms/1000:.1f} s = {loop_rate:.2f} items/s -> batch is {batch_rate/loop_rate:.1f}x (target >= 20x)")
print(f"flood:  {flood['items']} pre-signed in {flood['seconds']:.1f} s = {flood['itemsPerSecond']:.1f} items/s, p50 {flood['p50Ms']} ms p99 {flood['p99Ms']} ms -> batch is {batch_rate/flood['itemsPerSecond']:.2f}x (target >= 0.8x)")
pairs = json.load(open(f"{work}/redeems2.json"))
want = sorted((None, 10**15 + k * 10**9) for k in range(n))
got_amounts = sorted(a for _, a in pairs)
assert got_amounts == [a for _, a in want], ("crash batch: redemptions on chain", len(pairs), n)
def cpu(path):
    client, server, chains = (float(x) for x in open(path).read().split())
    return client, server, chains
for name, path, items_n in (("batch", f"{work}/cpu1", n), ("flood", f"{work}/cpuf", n)):
    c, sv, ch = cpu(path)
    print(f"cpu {name}: client {c*1e6/items_n:.0f} us/item, platform (sandbox + relayer) {sv*1e6/items_n:.0f} us/item, chains (anvil) {ch*1e6/items_n:.0f} us/item")
print(f"crash:  {kills} SIGKILLs ({signed_at_kill} with items signed and not yet sent), resumed each time: {len(pairs)} redemptions on chain for {n} items, 0 duplicates, 0 lost (from the chain's Redeem logs)")
PY
