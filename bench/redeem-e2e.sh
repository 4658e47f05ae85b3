#!/usr/bin/env bash
# End-to-end redeem on the sandbox, timed: wall time per `bridgectl redeem`, split into
#   http   waiting for HTTP answers (platform and node: server work + loopback),
#   sleep  polling intervals while the relayer finishes the redemption,
#   unlock the key's KDF (test cost here),
#   journal durable SQLite commits (fsync each: the price of never losing a signed tx),
#   client everything else: process start, config, parsing, checks, signing.
# Numbers come from BRIDGECTL_TIMINGS (see crates/flow/src/timing.rs); medians of N runs.
#
# Usage: bench/redeem-e2e.sh [N]     (release build; loopback only; stops by itself)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20}"
make -s tools
cargo build --release -q
BIN="${CARGO_TARGET_DIR:-target}/release/bridgectl"
work="$(mktemp -d)"
cleanup() { [ -n "${sb_pid:-}" ] && kill "$sb_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# shellcheck source=bench/sandbox-common.sh
. bench/sandbox-common.sh
start_sandbox
export BRIDGECTL_KEYSTORE="$work/keystore" BRIDGECTL_JOURNAL="$work/journal.sqlite3"
echo "bench-passphrase" >"$work/pass"; chmod 600 "$work/pass"
export BRIDGECTL_PASSPHRASE_FILE="$work/pass"
dev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devAccount"]["address"])' "$work/sandbox.json")
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devAccount"]["privateKey"])' "$work/sandbox.json" \
  | "$BIN" key import dev --raw --unsafe-test-kdf >/dev/null

for i in $(seq "$N"); do
  start=$(date +%s%N)
  BRIDGECTL_TIMINGS=1 "$BIN" --json redeem --from "$dev" --amount 0.01 --yes \
    >"$work/out.$i.json" 2>"$work/err.$i.txt"
  end=$(date +%s%N)
  echo "$(( (end - start) / 1000 ))" >"$work/wall.$i"
done

python3 - "$work" "$N" <<'PY'
import json, statistics, sys, glob
work, n = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, n + 1):
    t = None
    for line in open(f"{work}/err.{i}.txt"):
        if line.startswith('{"timings"'):
            t = json.loads(line)["timings"]
    out = json.load(open(f"{work}/out.{i}.json"))
    assert out["status"] == "completed", out
    t["wallUs"] = int(open(f"{work}/wall.{i}").read())
    rows.append(t)
def med(k): return statistics.median(r[k] for r in rows)
print(f"redeem end to end on the sandbox, {n} runs, medians (ms):")
for k, label in [("wallUs", "wall (outside the process)"), ("totalUs", "total (inside the process)"),
                 ("httpUs", "http waits (server + loopback)"), ("sleepUs", "poll sleeps (relayer)"),
                 ("unlockUs", "unlock (KDF, test cost)"), ("journalUs", "journal commits (fsync)"),
                 ("clientUs", "client work (KDF, journal excluded)")]:
    print(f"  {label:<34} {med(k)/1000:8.2f}")
print(f"  http requests per redeem           {med('httpRequests'):8.0f}")
PY
