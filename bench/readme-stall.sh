#!/usr/bin/env bash
# How long the README's wallet (crates/flow/examples/redeem.rs) holds up a current-thread
# runtime while it redeems: a task beside it ticks every 2 ms, and the longest gap past
# its tick is the stall (crates/flow/tests/readme_stall.rs; the sandbox runs on a
# runtime of its own). One signature per run, with the key at the default KDF cost
# (unlocked off the runtime); the journal and the signing log are SQLite files, each
# signature one durable commit of each.
#
#   bench/readme-stall.sh [ROUNDS]                  # default 15
#   BASELINE=path/to/readme_stall-HASH bench/readme-stall.sh   # a second build, same rounds
#
# With BASELINE (the test binary of another build: `cargo test -p bridgectl-flow --test
# readme_stall --no-run` prints its path), each round runs both, in an order that
# rotates: this machine's speed drifts over minutes, so two builds compare only within
# one run. Prints the median and the largest stall of each, and the blocking unlock's
# (the same key unlocked on the runtime) as a yardstick.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-15}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}"
make -s tools
BIN="${BIN:-$(cargo test -q -p bridgectl-flow --test readme_stall --no-run --message-format=json \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "readme_stall":
        print(m["executable"])' | tail -n 1)}"
[ -x "$BIN" ] || { echo "no test binary at '$BIN'" >&2; exit 1; }
[ -z "${BASELINE:-}" ] || [ -x "$BASELINE" ] || { echo "no baseline at '$BASELINE'" >&2; exit 1; }

python3 - "$ROUNDS" "$BIN" ${BASELINE:+"$BASELINE"} <<'PY'
import os, re, statistics, subprocess, sys

rounds, builds = int(sys.argv[1]), sys.argv[2:]
names = ["this build", "baseline"][: len(builds)]
seen = {n: {"redeem": [], "unlock": []} for n in names}
line = re.compile(r"readme-stall: redeem ([0-9.]+) ms, blocking unlock ([0-9.]+) ms")
env = {k: v for k, v in os.environ.items() if not k.startswith("BRIDGECTL_")}
for r in range(rounds):
    order = list(zip(names, builds))
    if r % 2:
        order.reverse()
    for name, exe in order:
        out = subprocess.run([exe, "--nocapture", "--test-threads=1"], cwd="crates/flow",
                             env=env, capture_output=True, text=True)
        m = line.search(out.stderr)
        if out.returncode != 0 or not m:
            sys.exit(f"{name} failed (exit {out.returncode}):\n{out.stdout}\n{out.stderr}")
        seen[name]["redeem"].append(float(m.group(1)))
        seen[name]["unlock"].append(float(m.group(2)))
print(f"# {rounds} rounds; longest stall of a 2 ms ticker, ms")
print(f"{'build':<12} {'redeem median':>14} {'redeem max':>11} {'blocking unlock median':>23}")
for name in names:
    s = seen[name]
    print(f"{name:<12} {statistics.median(s['redeem']):>14.2f} {max(s['redeem']):>11.2f} "
          f"{statistics.median(s['unlock']):>23.1f}")
PY
