#!/usr/bin/env bash
# Mutation testing of the security core with cargo-mutants (`cargo install --locked
# cargo-mutants`): every mutant of the verifier, the policy, rawTx parsing and decoding,
# signing, and the key-file formats is built and run against its crate's tests. A
# "missed" mutant is a change to that code that no test notices; one that alters what
# gets signed, a refusal or an unlock is a missing test. Not part of `make test`: on two
# cores a full run takes hours, so it runs at the lowest priority, one job at a time.
#
#   bench/mutants.sh                        (every listed file)
#   bench/mutants.sh --file crates/tx/src/policy.rs   (narrow it; extra args go to cargo mutants)
#
# Mutants per file (cargo-mutants 27): verify 107, decode 96, rawtx 77, secret_storage 64,
# format 42, policy 28, kdf 28, sign 5.
#   MUTANTS_OUT=/var/tmp/m bench/mutants.sh (where the report goes; default target/mutants)
#
# The report: <out>/mutants.out/{caught,missed,timeout,unviable}.txt, one mutant a line;
# the counts are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${MUTANTS_OUT:-target/mutants}"
files=(
    crates/tx/src/verify.rs
    crates/tx/src/policy.rs
    crates/tx/src/rawtx.rs
    crates/tx/src/decode.rs
    crates/tx/src/sign.rs
    crates/keystore/src/format.rs
    crates/keystore/src/secret_storage.rs
    crates/keystore/src/kdf.rs
)
args=()
if [ "$#" -eq 0 ] || ! printf '%s\n' "$@" | grep -qx -- '--file'; then
    for f in "${files[@]}"; do args+=(--file "$f"); done
fi

mkdir -p "$out"
# No debug info: each mutant is a rebuild, and nobody debugs a mutant.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
nice -n 19 cargo mutants --no-shuffle --jobs "${MUTANTS_JOBS:-1}" --output "$out" \
    --package bridgectl-tx --package bridgectl-keystore "${args[@]}" "$@" || true

for kind in caught missed timeout unviable; do
    f="$out/mutants.out/$kind.txt"
    printf '%-9s %6s\n' "$kind" "$( [ -f "$f" ] && wc -l <"$f" || echo -)"
done
