#!/usr/bin/env bash
# Per-invocation cost of `bridgectl sign` (release build, key stored with the test-only
# KDF so the KDF does not dominate) against `cast mktx --legacy` signing the same
# transaction with the same key. Both are offline. Needs hyperfine (apt-get install
# hyperfine) and the pinned tools (make tools).
#
#   bench/sign-vs-cast.sh            # builds release, runs hyperfine, prints the table
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/bridgectl-target}"
command -v hyperfine >/dev/null || { echo "hyperfine is required: apt-get install -y hyperfine" >&2; exit 1; }
cargo build --release --quiet
BIN="$CARGO_TARGET_DIR/release/bridgectl"
CAST="tools/node_modules/.bin/cast"
[ -x "$CAST" ] || { echo "$CAST is missing: run make tools" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export BRIDGECTL_KEYSTORE="$WORK/keystore" XDG_CONFIG_HOME="$WORK/config"
KEY=4646464646464646464646464646464646464646464646464646464646464646
printf 'bench passphrase\n' > "$WORK/pass"; chmod 600 "$WORK/pass"
chmod 600 "$WORK/pass"
echo "$KEY" | "$BIN" key import bench --raw --unsafe-test-kdf --passphrase-file "$WORK/pass" >/dev/null
cat > "$WORK/raw.json" <<JSON
{"from":"0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f","to":"0x3535353535353535353535353535353535353535","data":"0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000","nonce":"0x9","gasLimit":"0x186a0","gasPrice":"0x4a817c800","chainId":617317}
JSON

# Same bytes from both, or the comparison means nothing.
OURS="$("$BIN" sign "$WORK/raw.json" --yes --raw --passphrase-file "$WORK/pass" 2>/dev/null)"
THEIRS="$("$CAST" mktx --legacy --private-key "0x$KEY" --nonce 9 --gas-limit 100000 \
  --gas-price 20000000000 --chain 617317 0x3535353535353535353535353535353535353535 \
  0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000)"
[ "$OURS" = "$THEIRS" ] || { echo "outputs differ:\n$OURS\n$THEIRS" >&2; exit 1; }

hyperfine --warmup 5 --runs "${RUNS:-200}" -N --export-markdown "$WORK/table.md" \
  -n "bridgectl sign (test KDF)" \
  "$BIN sign $WORK/raw.json --yes --raw --passphrase-file $WORK/pass" \
  -n "cast mktx --legacy" \
  "$CAST mktx --legacy --private-key 0x$KEY --nonce 9 --gas-limit 100000 --gas-price 20000000000 --chain 617317 0x3535353535353535353535353535353535353535 0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000"
cat "$WORK/table.md"
