#!/usr/bin/env bash
# One offline `bridgectl sign` against `cast mktx --legacy` signing the same transaction
# with the same key, whole process each, in pairs: the same nonce for both, the signed
# bytes compared before any time counts, the order alternating from pair to pair, each
# side pinned to its own core (bridgectl to core 0, cast to core 1). bridgectl runs as an
# operator runs it: every expectation flag the verifier needs, the key stored with the
# test-only KDF (so the KDF does not dominate), its journal and signing log already there
# (steady state: one entry and one journal record per signature, each fsync'd).
#
#   bench/sign-vs-cast.sh [PAIRS]      # default 40; the binary `make release` builds
#   BIN=path/to/bridgectl bench/sign-vs-cast.sh   # another build (e.g. cargo build --release)
#
# `make release` is what ships: on Linux with glibc a static PIE, which skips the dynamic
# loader at every start (the Makefile says why). A plain `cargo build --release` binary
# pays about 0.7 ms more per signature here.
#
# Prints the median wall time, CPU time and peak RSS of each side, and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS="${1:-40}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}"
make -s tools
BIN="${BIN:-$(make -s release | tail -n 1)}"
CAST="$PWD/tools/node_modules/.bin/cast"
[ -x "$CAST" ] || { echo "$CAST is missing: run make tools" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "two cores are needed to pin each side to its own" >&2; exit 1; }

WORK="$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-sign-vs-cast.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
python3 - "$BIN" "$CAST" "$WORK" "$PAIRS" <<'PY'
import os, statistics, subprocess, sys, time

bin_, cast, work, pairs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
key = "46" * 32
sender = "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"
to = "0x3535353535353535353535353535353535353535"
data = "0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000"
chain, gas, price = 617317, 100000, 20000000000
env = {k: v for k, v in os.environ.items() if not k.startswith("BRIDGECTL_")}
env.update(BRIDGECTL_KEYSTORE=f"{work}/keystore", BRIDGECTL_JOURNAL=f"{work}/journal.sqlite3",
           XDG_CONFIG_HOME=f"{work}/config")
os.makedirs(f"{work}/in")  # the requests arrive apart from the journal and the keys
with open(f"{work}/pass", "w", opener=lambda p, f: os.open(p, f, 0o600)) as f:
    f.write("bench passphrase\n")
subprocess.run([bin_, "key", "import", "bench", "--raw", "--unsafe-test-kdf",
                "--passphrase-file", f"{work}/pass"], input=key + "\n", text=True,
               env=env, check=True, capture_output=True)

def ours(nonce, first=False):
    raw = f"{work}/in/raw.{nonce}.json"
    with open(raw, "w") as f:
        f.write(f'{{"from":"{sender}","to":"{to}","data":"{data}","nonce":"{hex(nonce)}",'
                f'"gasLimit":"{hex(gas)}","gasPrice":"{hex(price)}","chainId":{chain}}}\n')
    cmd = [bin_, "sign", raw, "--yes", "--raw", "--passphrase-file", f"{work}/pass",
           "--expect-chain-id", str(chain), "--expect-to", to, "--expect-function", "redeem",
           "--expect-arg", "_amount=1500000000000000000", "--max-gas-price", "30gwei"]
    return cmd + (["--nonce", str(nonce)] if first else [])

def theirs(nonce):
    return [cast, "mktx", "--legacy", "--private-key", "0x" + key, "--nonce", str(nonce),
            "--gas-limit", str(gas), "--gas-price", str(price), "--chain", str(chain), to, data]

def run(cmd, core):
    """Whole process on `core`: (wall ns, cpu s, peak RSS KiB, stdout).

    Its stdout is a pipe, as when a script captures it. (A file truncated and written
    again each run costs both programs ext4's forced writeback of the replaced file
    when they exit, about 0.5 ms each here: a cost of the harness, not of them.)"""
    os.sched_setaffinity(0, {core})
    read_end, write_end = os.pipe()
    start = time.perf_counter_ns()
    pid = os.posix_spawn(cmd[0], cmd, env, file_actions=[
        (os.POSIX_SPAWN_DUP2, write_end, 1),
        (os.POSIX_SPAWN_CLOSE, read_end),
        (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
    os.close(write_end)
    # The signed transaction is a few hundred bytes: it fits the pipe's buffer, so the
    # child never waits for this reader and the read after it exits gets all of it.
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - start
    out = b""
    while chunk := os.read(read_end, 1 << 16):
        out += chunk
    os.close(read_end)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.decode().strip()

# The first signature makes the journal and the signing log; not timed.
run(ours(0, first=True), 0)
for nonce in range(1, 4):  # warm the page cache for both
    run(ours(nonce), 0); run(theirs(nonce), 1)
rows = {"bridgectl sign": [], "cast mktx --legacy": []}
for i in range(pairs):
    nonce = 4 + i
    a, b = ours(nonce), theirs(nonce)
    if i % 2 == 0:
        ra, rb = run(a, 0), run(b, 1)
    else:
        rb, ra = run(b, 1), run(a, 0)
    if ra[3] != rb[3]:
        sys.exit(f"nonce {nonce}: the signed bytes differ:\n{ra[3]}\n{rb[3]}")
    rows["bridgectl sign"].append(ra)
    rows["cast mktx --legacy"].append(rb)

med = {name: (statistics.median(r[0] for r in rs) / 1e6,
              statistics.median(r[1] for r in rs) * 1e3,
              max(r[2] for r in rs)) for name, rs in rows.items()}
print(f"{pairs} pairs, same bytes each pair, alternating order, bridgectl on core 0, cast on core 1")
print(f"{'':22} {'wall ms (median)':>17} {'cpu ms (median)':>16} {'peak RSS KiB':>13}")
for name, (wall, cpu, rss) in med.items():
    print(f"{name:22} {wall:17.2f} {cpu:16.2f} {rss:13d}")
(ow, oc, orss), (tw, tc, trss) = med["bridgectl sign"], med["cast mktx --legacy"]
print(f"{'bridgectl / cast':22} {ow / tw:16.2f}x {oc / tc:15.2f}x {orss / trss:12.2f}x")
PY
