#!/usr/bin/env bash
# One offline `bridgectl sign` against `cast mktx --legacy` signing the same transaction
# with the same key, whole process each, in rounds: the same nonce for each, the signed
# bytes compared before any time counts, the order rotating from round to round, each
# side pinned to its own core (bridgectl to core 0, cast to core 1). bridgectl runs as an
# operator runs it: every expectation flag the verifier needs, the key stored with the
# test-only KDF (so the KDF does not dominate), its journal and signing log already there
# (steady state: one entry and one journal record per signature, each fsync'd).
#
#   bench/sign-vs-cast.sh [ROUNDS]     # default 40; the binary `make release` builds
#   BIN=path/to/bridgectl bench/sign-vs-cast.sh   # another build (e.g. cargo build --release)
#   BASELINE=path/to/bridgectl bench/sign-vs-cast.sh  # a second build in the same rounds
#
# This machine's speed drifts by a fifth over minutes (cast alone: 6.5 to 9.0 ms), so
# two builds compare only within one run: with BASELINE, each round runs bridgectl,
# the baseline (each with its own keystore and journal, both on core 0) and cast, in
# an order that rotates from round to round.
#
# `make release` is what ships: on Linux with glibc a static PIE, which skips the dynamic
# loader at every start (the Makefile says why). A plain `cargo build --release` binary
# pays 0.3 to 0.45 ms more per signature here.
#
# Prints the median wall time, CPU time and peak RSS of each program, and each bridgectl
# build's ratios to cast.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-40}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}"
make -s tools
BIN="${BIN:-$(make -s release | tail -n 1)}"
CAST="$PWD/tools/node_modules/.bin/cast"
[ -x "$CAST" ] || { echo "$CAST is missing: run make tools" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "two cores are needed to pin each side to its own" >&2; exit 1; }

WORK="$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-sign-vs-cast.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# Every program runs from a copy made here the same way, as an install copies it. How a
# file came into the page cache changes how fast it starts (kernel 6.18 here: the
# linker's output and npm's extraction start 0.5 to 1.1 ms slower than the same bytes
# copied with cp), so each side is measured from the same kind of copy.
mkdir "$WORK/bin"
cp "$(readlink -f "$CAST")" "$WORK/bin/cast"
cp "$BIN" "$WORK/bin/bridgectl"
[ -z "${BASELINE:-}" ] || cp "$BASELINE" "$WORK/bin/baseline"
python3 - "$WORK/bin/cast" "$WORK" "$ROUNDS" "$WORK/bin/bridgectl" \
    ${BASELINE:+"$WORK/bin/baseline"} <<'PY'
import os, statistics, subprocess, sys, time

cast, work, rounds, builds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
key = "46" * 32
sender = "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"
to = "0x3535353535353535353535353535353535353535"
data = "0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000"
chain, gas, price = 617317, 100000, 20000000000
clean = {k: v for k, v in os.environ.items() if not k.startswith("BRIDGECTL_")}
os.makedirs(f"{work}/in")  # the requests arrive apart from the journals and the keys
with open(f"{work}/pass", "w", opener=lambda p, f: os.open(p, f, 0o600)) as f:
    f.write("bench passphrase\n")

def build_env(i):
    """Build `i`'s own keystore, journal and config, with the key imported."""
    home = f"{work}/build{i}"
    env = dict(clean, BRIDGECTL_KEYSTORE=f"{home}/keystore",
               BRIDGECTL_JOURNAL=f"{home}/journal.sqlite3", XDG_CONFIG_HOME=f"{home}/config")
    subprocess.run([builds[i], "key", "import", "bench", "--raw", "--unsafe-test-kdf",
                    "--passphrase-file", f"{work}/pass"], input=key + "\n", text=True,
                   env=env, check=True, capture_output=True)
    return env

envs = [build_env(i) for i in range(len(builds))]

def request(nonce):
    raw = f"{work}/in/raw.{nonce}.json"
    with open(raw, "w") as f:
        f.write(f'{{"from":"{sender}","to":"{to}","data":"{data}","nonce":"{hex(nonce)}",'
                f'"gasLimit":"{hex(gas)}","gasPrice":"{hex(price)}","chainId":{chain}}}\n')
    return raw

def ours(i, nonce, first=False):
    cmd = [builds[i], "sign", request(nonce), "--yes", "--raw", "--passphrase-file",
           f"{work}/pass", "--expect-chain-id", str(chain), "--expect-to", to,
           "--expect-function", "redeem", "--expect-arg", "_amount=1500000000000000000",
           "--max-gas-price", "30gwei"]
    return cmd + (["--nonce", str(nonce)] if first else []), envs[i], 0

def theirs(nonce):
    return [cast, "mktx", "--legacy", "--private-key", "0x" + key, "--nonce", str(nonce),
            "--gas-limit", str(gas), "--gas-price", str(price), "--chain", str(chain), to,
            data], clean, 1

def run(job):
    """Whole process on its core: (wall ns, cpu s, stdout).

    Its stdout is a pipe, as when a script captures it. (A file truncated and written
    again each run costs both programs ext4's forced writeback of the replaced file
    when they exit, about 0.5 ms each here: a cost of the harness, not of them.)"""
    cmd, env, core = job
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
    return wall, usage.ru_utime + usage.ru_stime, out.decode().strip()

names = ["bridgectl sign"] + ["baseline sign"] * (len(builds) > 1) + ["cast mktx --legacy"]
# The first signature makes each journal and signing log; not timed.
for i in range(len(builds)):
    run(ours(i, 0, first=True))
for nonce in range(1, 4):  # warm the page cache for every program
    for i in range(len(builds)):
        run(ours(i, nonce))
    run(theirs(nonce))
rows = {name: [] for name in names}
for r in range(rounds):
    nonce = 4 + r
    jobs = [ours(i, nonce) for i in range(len(builds))] + [theirs(nonce)]
    order = list(range(len(jobs)))
    order = order[r % len(jobs):] + order[:r % len(jobs)]
    results = {k: run(jobs[k]) for k in order}
    outs = {results[k][2] for k in order}
    if len(outs) != 1:
        sys.exit(f"nonce {nonce}: the signed bytes differ:\n" + "\n".join(sorted(outs)))
    for k, name in enumerate(names):
        rows[name].append(results[k])

# Peak RSS in its own pass, each run under GNU time: rusage from this process would
# report Python's own peak for any child it starts (a spawned child's high-water mark
# starts at its parent's, and exec keeps it).
TIME = "/usr/bin/time"
def peak_rss(job):
    cmd, env, _ = job
    done = subprocess.run([TIME, "-f", "%M", *cmd], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{cmd[0]} failed under {TIME}: {done.stderr}")
    return int(done.stderr.strip().splitlines()[-1])
rss = {name: None for name in names}
if os.access(TIME, os.X_OK):
    rss = {name: 0 for name in names}
    for r in range(10):
        nonce = 4 + rounds + r
        jobs = [ours(i, nonce) for i in range(len(builds))] + [theirs(nonce)]
        for k, name in enumerate(names):
            rss[name] = max(rss[name], peak_rss(jobs[k]))

med = {name: (statistics.median(r[0] for r in rs) / 1e6,
              statistics.median(r[1] for r in rs) * 1e3,
              rss[name]) for name, rs in rows.items()}
print(f"{rounds} rounds, same bytes each round, rotating order, bridgectl on core 0, cast "
      f"on core 1")
print(f"{'':22} {'wall ms (median)':>17} {'cpu ms (median)':>16} {'peak RSS KiB':>13}")
for name, (wall, cpu, peak) in med.items():
    shown = "n/a" if peak is None else str(peak)
    print(f"{name:22} {wall:17.2f} {cpu:16.2f} {shown:>13}")
tw, tc, trss = med["cast mktx --legacy"]
for name in names[:-1]:
    ow, oc, orss = med[name]
    label = f"{name.split()[0]} / cast"
    ratio = "n/a" if orss is None else f"{orss / trss:.2f}x"
    print(f"{label:22} {ow / tw:16.2f}x {oc / tc:15.2f}x {ratio:>13}")
if rss[names[0]] is None:
    print(f"(peak RSS needs GNU time at {TIME}: apt-get install -y time)")
PY
