#!/usr/bin/env bash
# Mutation testing of the security core with cargo-mutants (`cargo install --locked
# cargo-mutants`): every mutant of the verifier, the policy, rawTx parsing and decoding,
# signing, and the key-file formats is built and run against its crate's tests. A
# "missed" mutant is a change to that code that no test notices; one that alters what
# gets signed, a refusal or an unlock is a missing test. Not part of `make test`: on two
# cores a full run takes hours, so it runs at the lowest priority, one job at a time.
#
#   bench/mutants.sh                        (the core: every file listed below)
#   bench/mutants.sh --file crates/tx/src/policy.rs   (narrow it; extra args go to cargo mutants)
#   MUTANTS_SET=guard bench/mutants.sh      (the one-nonce guard and the limits: the functions
#                                            of tx log/limits/sign and bridgectl-signing-log
#                                            that decide what is signed or refused, against
#                                            the tests of both crates)
#   MUTANTS_SET=state bench/mutants.sh      (the deciding functions of journal, resume, key
#                                            store and webhook re-verify, against their own
#                                            crates' tests: the CLI end-to-end tests that also
#                                            guard them take ~3 min a run, too slow per mutant)
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
packages=(--package bridgectl-tx --package bridgectl-keystore)
case "${MUTANTS_SET:-core}" in
core)
    files=(
        crates/tx/src/verify.rs
        crates/tx/src/policy.rs
        crates/tx/src/rawtx.rs
        crates/tx/src/decode.rs
        crates/tx/src/local_signing.rs
        crates/keystore/src/format.rs
        crates/keystore/src/secret_storage.rs
        crates/keystore/src/kdf.rs
    )
    ;;
guard)
    files=(crates/tx/src/signing_log.rs crates/tx/src/limits.rs crates/tx/src/local_signing.rs
        crates/tx/src/signer.rs crates/signing-log/src/signing.rs crates/signing-log/src/store.rs
        crates/signing-log/src/walk.rs)
    # The guard's tests are the signing log's (tests/signing_log.rs), whichever crate the
    # mutant is in; only the deciding functions, not the plumbing.
    packages=(--package bridgectl-tx --package bridgectl-signing-log
        --test-package bridgectl-tx --test-package bridgectl-signing-log
        --re 'nonce_free|same_signature|signed_at_nonce|read_spent|::append|WindowLimit|window_total|window_in|make_entry|sign_and_log')
    ;;
state)
    files=(
        crates/flow/src/journal/flows.rs
        crates/flow/src/journal/groups.rs
        crates/flow/src/journal/nonces.rs
        crates/flow/src/flows/resume.rs
        crates/keystore/src/store.rs
        crates/webhook/src/store/sqlite/mod.rs
        crates/webhook/src/store/sqlite/writer.rs
    )
    # The deciding functions: nonce reservation and the journal's record of signatures,
    # what resume takes up, the key writes, and the webhook re-verification.
    packages=(--package bridgectl-flow --package bridgectl-keystore --package bridgectl-webhook
        --re 'reserve|next_nonce|hold_reservation|record_signed|signed_with_hash|stage|write_checked_temp|check_unique|Keystore::create|Keystore::passwd|Keystore::import|reverify|Reverify|signature_matches')
    ;;
*)
    echo "MUTANTS_SET is core, guard or state" >&2
    exit 2
    ;;
esac
args=()
if [ "$#" -eq 0 ] || ! printf '%s\n' "$@" | grep -qx -- '--file'; then
    for f in "${files[@]}"; do args+=(--file "$f"); done
fi

mkdir -p "$out"
# No debug info: each mutant is a rebuild, and nobody debugs a mutant.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
nice -n 19 cargo mutants --no-shuffle --jobs "${MUTANTS_JOBS:-1}" --output "$out" \
    "${packages[@]}" "${args[@]}" "$@" || true

for kind in caught missed timeout unviable; do
    f="$out/mutants.out/$kind.txt"
    printf '%-9s %6s\n' "$kind" "$( [ -f "$f" ] && wc -l <"$f" || echo -)"
done
