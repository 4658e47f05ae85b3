#!/usr/bin/env bash
# fsync and fdatasync calls per operation, counted with strace on the client process (and
# its threads), with the files they were made on. Release build; the online rows run on
# the sandbox over loopback. Needs strace (apt-get install -y strace) and the pinned tools.
#
#   bench/fsyncs.sh                      # this tree
#   BASELINE=/path/to/old/bridgectl bench/fsyncs.sh   # the same table for another build
#
# What a row should say (crates/local/src/sqlite.rs explains the design):
#   offline sign, steady:  signing-log.sqlite3-wal x1 (the entry before the bytes leave),
#                          journal.sqlite3-wal x1 (the signed bytes before they leave)
#   online redeem:         the same two, before the submission
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "strace is required: apt-get install -y strace" >&2; exit 1; }
make -s tools
cargo build --release -q
BIN="${CARGO_TARGET_DIR:-target}/release/bridgectl"
SANDBOX_BIN="$BIN"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/bridgectl-fsyncs.XXXXXX")"
cleanup() { [ -n "${sb_pid:-}" ] && kill "$sb_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# count LABEL CMD...: runs CMD under strace, prints the number of syncs and their files.
count() {
    local label="$1"; shift
    if ! strace -f -qq -y -e trace=fsync,fdatasync -o "$work/trace" "$@" >"$work/out" 2>"$work/err"; then
        echo "$label: the command failed:" >&2; cat "$work/err" >&2; exit 1
    fi
    local n files
    n=$(grep -cE '(fsync|fdatasync)\(' "$work/trace" || true)
    files=$(sed -nE 's/.*(fsync|fdatasync)\([0-9]+<([^>]*)>.*/\2/p' "$work/trace" \
        | xargs -r -n1 basename | sort | uniq -c | awk '{printf "%s x%s  ", $2, $1}')
    printf '  %-44s %3d   %s\n' "$label" "$n" "$files"
    last_n=$n
}

# shellcheck source=bench/sandbox-common.sh
. bench/sandbox-common.sh
start_sandbox_with() { BIN="$SANDBOX_BIN" start_sandbox; }
start_sandbox_with
dev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devAccount"]["address"])' "$work/sandbox.json")
dev_key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devAccount"]["privateKey"])' "$work/sandbox.json")

table() { # BINARY
    local bin="$1" home
    home="$(mktemp -d "$work/run.XXXXXX")"
    export BRIDGECTL_KEYSTORE="$home/keystore" BRIDGECTL_JOURNAL="$home/journal.sqlite3"
    echo "bench-passphrase" >"$home/pass"; chmod 600 "$home/pass"
    export BRIDGECTL_PASSPHRASE_FILE="$home/pass"
    local key=4646464646464646464646464646464646464646464646464646464646464646
    local from=0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f
    raw() { # NONCE
        printf '{"from":"%s","to":"0x3535353535353535353535353535353535353535","data":"0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000","nonce":"0x%x","gasLimit":"0x186a0","gasPrice":"0x4a817c800","chainId":617317}\n' "$from" "$1" >"$home/raw.json"
    }
    # Offline: no profile but the flags.
    local offline=(env -u BRIDGECTL_CONFIG -u BRIDGECTL_PROFILE "XDG_CONFIG_HOME=$home/config" "$bin")
    local sign=(--expect-chain-id 617317 --expect-to 0x3535353535353535353535353535353535353535
        --expect-function redeem --expect-arg _amount=1500000000000000000 --max-gas-price 30gwei
        --yes --raw)
    echo "$bin"
    count "key import (new keystore)" sh -c "echo $key | $bin key import bench --raw --unsafe-test-kdf"
    raw 0
    count "offline sign, new journal and signing log" "${offline[@]}" sign "$home/raw.json" --nonce 0 "${sign[@]}"
    rm -f "$BRIDGECTL_JOURNAL"*
    raw 1
    count "offline sign, new journal" "${offline[@]}" sign "$home/raw.json" --nonce 1 "${sign[@]}"
    local counts=() n
    for n in $(seq 2 21); do
        raw "$n"
        count "offline sign, steady ($n)" "${offline[@]}" sign "$home/raw.json" "${sign[@]}" >"$work/row"
        counts+=("$last_n")
    done
    cat "$work/row"
    echo "    (20 steady signatures: $(printf '%s\n' "${counts[@]}" | sort -n | uniq -c | awk '{printf "%s runs with %s  ", $1, $2}'))"

    echo "$dev_key" | "$bin" key import dev --raw --unsafe-test-kdf >/dev/null
    "$bin" --json redeem --from "$dev" --amount 0.001 --yes >/dev/null 2>&1
    counts=()
    for n in $(seq 1 10); do
        count "online redeem, steady ($n)" "$bin" --json redeem --from "$dev" --amount 0.001 --yes >"$work/row"
        counts+=("$last_n")
    done
    cat "$work/row"
    echo "    (10 steady redeems: $(printf '%s\n' "${counts[@]}" | sort -n | uniq -c | awk '{printf "%s runs with %s  ", $1, $2}'))"
    local items=10 k
    for k in $(seq "$items"); do
        echo "{\"op\": \"redeem\", \"from\": \"$dev\", \"amount\": \"0.001\", \"id\": \"i$k\"}"
    done >"$home/batch.jsonl"
    count "batch run, $items redeems (whole run)" "$bin" --json batch run "$home/batch.jsonl" --yes
}

echo "# fsync + fdatasync per operation (strace -f), files synced"
table "$BIN"
if [ -n "${BASELINE:-}" ]; then
    echo
    table "$BASELINE"
fi
