#!/usr/bin/env bash
# The binary `make release` builds is not the one the tests ran (other link flags), so
# it gets its own check, as it ships:
#   1. on Linux with glibc it is a static PIE: no interpreter, no shared library needed,
#      still position independent (so the kernel still places it at a random address);
#   2. it signs a rawTx offline, as an operator runs it (expectation flags, a key stored
#      with the test-only KDF, a new journal and signing log), and the bytes are exactly
#      those `cast mktx --legacy` signs with the same key (RFC 6979: one right answer).
#
#   scripts/release-check.sh PATH/TO/bridgectl      # make release-check runs it
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1"
cast="$PWD/tools/node_modules/.bin/cast"
[ -x "$bin" ] || { echo "release-check: $bin is missing: run make release" >&2; exit 1; }
[ -x "$cast" ] || { echo "release-check: $cast is missing: run make tools" >&2; exit 1; }

# (Outputs are read whole: `grep -q` in a pipe under pipefail can stop the writer early.)
host="$(rustc -vV | sed -n 's/^host: //p')"
case "$host" in
*-linux-gnu)
    program_headers="$(readelf -lW "$bin")"
    dynamic="$(readelf -dW "$bin")"
    header="$(readelf -hW "$bin")"
    if grep -q 'INTERP' <<<"$program_headers"; then
        echo "release-check: $bin asks for a dynamic loader:" >&2
        grep -A1 'INTERP' <<<"$program_headers" >&2
        exit 1
    fi
    if grep -q '(NEEDED)' <<<"$dynamic"; then
        echo "release-check: $bin needs shared libraries:" >&2
        grep '(NEEDED)' <<<"$dynamic" >&2
        exit 1
    fi
    if ! grep -q 'Type: *DYN' <<<"$header"; then
        echo "release-check: $bin is not position independent (ASLR would not move it)" >&2
        exit 1
    fi
    linked="a static PIE, no shared library needed"
    ;;
*) linked="linked as $host links it" ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
while read -r name; do unset "$name"; done < <(compgen -e | grep '^BRIDGECTL_' || true)
export BRIDGECTL_KEYSTORE="$work/keystore" BRIDGECTL_JOURNAL="$work/journal.sqlite3" \
    XDG_CONFIG_HOME="$work/config"
key=4646464646464646464646464646464646464646464646464646464646464646
to=0x3535353535353535353535353535353535353535
data=0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000
(umask 077 && echo "release check" > "$work/pass")
echo "$key" | "$bin" key import check --raw --unsafe-test-kdf --passphrase-file "$work/pass" >/dev/null
printf '{"from":"0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f","to":"%s","data":"%s","nonce":"0x7","gasLimit":"0x186a0","gasPrice":"0x4a817c800","chainId":617317}\n' \
    "$to" "$data" > "$work/raw.json"
if ! ours="$("$bin" sign "$work/raw.json" --yes --raw --passphrase-file "$work/pass" --nonce 7 \
    --expect-chain-id 617317 --expect-to "$to" --expect-function redeem \
    --expect-arg _amount=1500000000000000000 --max-gas-price 30gwei 2>"$work/sign.err")"; then
    echo "release-check: $bin could not sign offline:" >&2
    cat "$work/sign.err" >&2
    exit 1
fi
theirs="$("$cast" mktx --legacy --private-key "0x$key" --nonce 7 --gas-limit 100000 \
    --gas-price 20000000000 --chain 617317 "$to" "$data")"
if [ "$ours" != "$theirs" ]; then
    printf 'release-check: the signed bytes differ from cast'"'"'s:\n  ours   %s\n  theirs %s\n' \
        "$ours" "$theirs" >&2
    exit 1
fi
echo "release-check: $bin is $linked; its offline signature is cast's, byte for byte"
