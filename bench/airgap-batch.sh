#!/usr/bin/env bash
# The air gap at batch scale: one offline `bridgectl sign` of a batch request of N
# redeems (default 1000) against N `cast mktx --legacy` processes signing the same
# transactions with the same key, in the same run, each pinned to its own core
# (bridgectl to core 0, cast to core 1), rounds in rotating order. bridgectl runs as an
# operator runs it: the offline profile (chain, contract, token, a gas-price cap, a
# spending limit, a standing approval of redeems so that --yes may sign), every item
# through the verifier, the nonce guard and the limits, its signing log and journal
# kept across rounds (each round signs the next N nonces), the signed batch written to a
# file; the key stored with the test-only KDF, as bench/sign-vs-cast.sh does (a real
# unlock adds its fraction of a second once per key per batch, not per signature).
# Before any time counts, every transaction's signed bytes are compared with cast's.
#
#   bench/airgap-batch.sh [N] [ROUNDS]          # default 1000 and 3; `make release`'s binary
#   BIN=path/to/bridgectl bench/airgap-batch.sh # another build
#   LIMITS=0 bench/airgap-batch.sh              # no spending limit in the profile
#
# With a spending limit, every process checks every entry of the window it reads once
# (hash, link, the key's signature): each round signs N more into the same 24 h window,
# so each round's batch reads N more entries than the one before.
#
# Prints per round and as medians: bridgectl's wall time for the batch and signatures
# per second, cast's for its N processes, the ratio; then the fsync and fdatasync calls
# of one batch (strace -f, per file), with its group commit (--commit-every, default 256).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000}"
ROUNDS="${2:-3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}"
make -s tools
BIN="${BIN:-$(make -s release | tail -n 1)}"
CAST="$PWD/tools/node_modules/.bin/cast"
[ -x "$CAST" ] || { echo "$CAST is missing: run make tools" >&2; exit 1; }
command -v strace >/dev/null || { echo "strace is required: apt-get install -y strace" >&2; exit 1; }
command -v taskset >/dev/null || { echo "taskset is required (util-linux)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "two cores are needed to pin each side to its own" >&2; exit 1; }

WORK="$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-airgap-batch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/bin"
cp "$(readlink -f "$CAST")" "$WORK/bin/cast"
cp "$BIN" "$WORK/bin/bridgectl"
python3 - "$WORK" "$N" "$ROUNDS" "${LIMITS:-1}" <<'PY'
import json, os, statistics, subprocess, sys, time, uuid

work, n, rounds, limits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] != "0"
ours, cast = f"{work}/bin/bridgectl", f"{work}/bin/cast"
key = "46" * 32
sender = "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"
to = "0x3535353535353535353535353535353535353535"
amount = 1500000000000000000
data = "0xdb006a75" + f"{amount:064x}"
chain, gas, price = 617317, 100000, 20000000000
clean = {k: v for k, v in os.environ.items() if not k.startswith("BRIDGECTL_")}
env = dict(clean, BRIDGECTL_KEYSTORE=f"{work}/keystore",
           XDG_CONFIG_HOME=f"{work}/config", XDG_STATE_HOME=f"{work}/state")
os.makedirs(f"{work}/config/bridgectl")
limits_toml = ("\n[profiles.default.policy.limits]\n"
               'st = { per = "24h", max = "100000000", max-per-tx = "2" }\n') if limits else ""
with open(f"{work}/config/bridgectl/config.toml", "w") as f:
    f.write(f"""[profiles.default]
side_chain_id = {chain}
st_contract = "{to}"
side_symbol = "ST"
side_decimals = 18

[profiles.default.policy]
max-gas-price = 30000000000
{limits_toml}
[[profiles.default.policy.auto-approve]]
function = "redeem"
token = "ST"
max = "2"
""")
with open(f"{work}/pass", "w", opener=lambda p, fl: os.open(p, fl, 0o600)) as f:
    f.write("bench passphrase\n")
subprocess.run([ours, "key", "import", "bench", "--raw", "--unsafe-test-kdf",
                "--passphrase-file", f"{work}/pass"], input=key + "\n", text=True,
               env=env, check=True, capture_output=True)
os.makedirs(f"{work}/in")
os.makedirs(f"{work}/out")

def request(first):
    """A batch request of n redeems at nonces first.., as `batch prepare` writes one."""
    items = []
    for k in range(n):
        raw = {"from": sender, "to": to, "data": data, "nonce": hex(first + k),
               "gasLimit": hex(gas), "gasPrice": hex(price), "chainId": chain}
        intent = {"function": "redeem", "args": {"_amount": str(amount)}, "to": to,
                  "chainId": chain, "token": {"symbol": "ST", "decimals": 18},
                  "description": "redeem 1.5 ST into MT"}
        items.append({"index": k, "id": f"item-{k}", "txId": str(uuid.uuid4()),
                      "rawTx": raw, "intent": intent})
    sender_line = {"from": sender, "chainId": chain, "firstNonce": first, "items": n}
    text = ('{\n  "format": "bridgectl-batch-request",\n  "version": 1,\n'
            f'  "batchId": "{uuid.uuid4()}",\n  "origin": {{"source":"bench"}},\n'
            '  "senders": [\n    ' + json.dumps(sender_line, separators=(",", ":"))
            + '\n  ],\n  "items": [\n    '
            + ",\n    ".join(json.dumps(i, separators=(",", ":")) for i in items)
            + "\n  ]\n}\n")
    path = f"{work}/in/request-{first}.json"
    with open(path, "w") as f:
        f.write(text)
    return path

def sign_cmd(first, tag):
    return ["taskset", "-c", "0", ours, "sign", request(first), "--out",
            f"{work}/out/signed-{tag}-{first}.json", "--yes", "--passphrase-file",
            f"{work}/pass", "--nonce-for", f"{sender}={first}"]

def run_ours(first):
    """One batch: (wall s, {nonce: signed hex})."""
    cmd = sign_cmd(first, "timed")
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bridgectl failed: {done.stderr}")
    with open(cmd[cmd.index("--out") + 1]) as f:
        signed = json.load(f)
    assert len(signed["items"]) == n and not signed["refused"], signed["refused"][:3]
    return wall, {i["nonce"]: i["signedTx"] for i in signed["items"]}

def run_cast(first):
    """n cast processes, one after another: (wall s, {nonce: signed hex})."""
    out = {}
    start = time.perf_counter()
    for k in range(n):
        done = subprocess.run(
            ["taskset", "-c", "1", cast, "mktx", "--legacy", "--private-key", "0x" + key,
             "--nonce", str(first + k), "--gas-limit", str(gas), "--gas-price", str(price),
             "--chain", str(chain), to, data], env=clean, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"cast failed: {done.stderr}")
        out[first + k] = done.stdout.strip()
    return time.perf_counter() - start, out

# A first batch makes the journal and the signing log; not timed.
subprocess.run(sign_cmd(0, "warm"), env=env, check=True, capture_output=True)
first = n
rows = []
for r in range(rounds):
    jobs = [("bridgectl", run_ours), ("cast", run_cast)]
    if r % 2:
        jobs.reverse()
    results = {name: fn(first) for name, fn in jobs}
    (tw, theirs), (ow, mine) = results["cast"], results["bridgectl"]
    differ = [k for k in mine if mine[k] != theirs[k]]
    if differ:
        sys.exit(f"nonce {differ[0]}: bridgectl signed {mine[differ[0]]}, cast {theirs[differ[0]]}")
    rows.append((ow, tw))
    print(f"round {r + 1}: bridgectl {ow:.3f} s for {n} ({n / ow:,.0f}/s), "
          f"cast {tw:.2f} s for {n} processes ({n / tw:,.0f}/s): {tw / ow:.1f}x, "
          f"the same {n} signed transactions")
    first += n
ow = statistics.median(r[0] for r in rows)
tw = statistics.median(r[1] for r in rows)
print(f"spending limit: {'24h window, every entry of it checked' if limits else 'none'}")
print(f"median of {rounds}: bridgectl {n / ow:,.0f} signatures/s ({ow * 1000 / n:.3f} ms each, "
      f"one process), cast {n / tw:,.0f}/s ({tw * 1000 / n:.2f} ms each, a process each): "
      f"{tw / ow:.1f}x")

# fsyncs of one batch, per file.
trace = f"{work}/trace"
cmd = sign_cmd(first, "strace")[3:]
done = subprocess.run(["strace", "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", trace,
                       *cmd], env=env, capture_output=True, text=True)
if done.returncode != 0:
    sys.exit(f"bridgectl under strace failed: {done.stderr}")
files = {}
for line in open(trace):
    if "fsync(" in line or "fdatasync(" in line:
        name = line.split("<", 1)[1].split(">", 1)[0] if "<" in line else "?"
        name = os.path.basename(name)
        if name.startswith("signed-strace") or name.startswith(".tmp") or name.startswith(".bridgectl"):
            name = "(the signed batch file or its temp file)"
        files[name] = files.get(name, 0) + 1
total = sum(files.values())
print(f"fsync + fdatasync for one batch of {n} (strace -f): {total} "
      f"({total / n:.3f} per signature); per file: "
      + ", ".join(f"{k} x{v}" for k, v in sorted(files.items())))
summary = subprocess.run(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync",
                          *sign_cmd(first + n, "count")[3:]], env=env, capture_output=True,
                         text=True)
print("strace -c:\n" + "\n".join("  " + l for l in summary.stderr.strip().splitlines()))
PY
