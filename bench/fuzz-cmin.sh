#!/usr/bin/env bash
# Re-minimises the committed regression corpus fuzz/regressions/<target>/ after a
# campaign (bench/fuzz.sh), so the folder stays small: the campaign's corpus
# fuzz/corpus/<target>/ (when there is one) and the committed inputs are merged by
# coverage (`cargo fuzz cmin`, libFuzzer -merge=1: a greedy subset, smallest inputs
# first, that reaches every feature, i.e. edge and hit-count bucket, that the whole set
# reaches), and every `crash-*` reproducer is kept whatever cmin says, because a fixed
# crash must stay replayed. Needs nightly and cargo-fuzz.
#
#   bench/fuzz-cmin.sh [TARGET...] [-- LIBFUZZER_ARG...]   (default: every target)
#   FUZZ_CMIN_CORPUS=0 bench/fuzz-cmin.sh json             (committed inputs only)
#   bench/fuzz-cmin.sh -- -use_counters=0                  (keep every edge, not every
#                                                           hit-count bucket: ~1/3 the files)
#
# Typical round: bench/fuzz.sh 1800 (fuzz/corpus/<target>/ starts from the committed
# inputs and grows), fix and copy any crash from fuzz/artifacts/<target>/ into
# fuzz/regressions/<target>/ (keep its crash-<sha1> name), then bench/fuzz-cmin.sh.
#
# Prints per target: files before -> after (crash files kept) and the features and edges
# the kept inputs reach. Review with `git status` and commit the result;
# `cargo test -p bridgectl-fuzzing` replays it on stable.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

targets=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do targets+=("$1"); shift; done
if [ $# -gt 0 ]; then shift; fi
extra=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(nice -n 19 ionice -c3 cargo +nightly fuzz list)
fi
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/target}"

nice -n 19 ionice -c3 cargo +nightly fuzz build -O -s none >/dev/null 2>&1 ||
    nice -n 19 ionice -c3 cargo +nightly fuzz build -O -s none

# Work in a scratch folder under fuzz/ (cargo fuzz cmin renames the corpus folder, so it
# must be on the same file system as its own temporary folder in fuzz/).
work="$(mktemp -d "$PWD/cmin.XXXXXX")"
trap 'rm -rf "$work"' EXIT

printf '%-18s %8s %8s %8s %8s %8s\n' target before after crashes ft cov
for t in "${targets[@]}"; do
    reg="regressions/$t"
    mkdir -p "$reg"
    before="$(find "$reg" -maxdepth 1 -type f | wc -l)"
    rm -rf "$work/$t" "$work/$t.crash"
    mkdir -p "$work/$t" "$work/$t.crash"
    cp -r -- "$reg"/. "$work/$t/"
    if [ "${FUZZ_CMIN_CORPUS:-1}" != 0 ] && [ -d "corpus/$t" ]; then
        cp -rn -- "corpus/$t"/. "$work/$t/"
    fi
    # crash reproducers are set aside and put back unconditionally
    find "$work/$t" -maxdepth 1 -type f -name 'crash-*' -exec mv -t "$work/$t.crash" {} +
    # -max_len 65600 as in bench/fuzz.sh: a key file (64 KiB cap) plus its passphrase line.
    nice -n 19 ionice -c3 cargo +nightly fuzz cmin -O -s none "$t" "$work/$t" -- \
        -max_len=65600 -timeout=20 -rss_limit_mb=2048 ${extra[@]+"${extra[@]}"} >"$work/$t.log" 2>&1 || {
        tail -n 20 "$work/$t.log" >&2
        echo "$t: cmin failed, fuzz/regressions/$t left as it was" >&2
        exit 1
    }
    for c in "$work/$t.crash"/*; do
        [ -e "$c" ] || continue
        # cmin names what it keeps by its SHA-1: drop the copy of a kept reproducer
        rm -f -- "$work/$t/$(sha1sum <"$c" | cut -d' ' -f1)"
        mv -- "$c" "$work/$t/"
    done
    if [ -z "$(ls -A "$work/$t")" ]; then
        tail -n 20 "$work/$t.log" >&2
        echo "$t: cmin kept nothing, fuzz/regressions/$t left as it was" >&2
        exit 1
    fi
    crashes="$(find "$work/$t" -maxdepth 1 -type f -name 'crash-*' | wc -l)"
    rm -rf "$reg"
    mv "$work/$t" "$reg"
    after="$(find "$reg" -maxdepth 1 -type f | wc -l)"
    # features and edges the kept inputs reach (libFuzzer's MERGE-OUTER line)
    ft="$(sed -n 's/.* with \([0-9]*\) new features.*/\1/p' "$work/$t.log" | tail -1)"
    cov="$(sed -n 's/.*; \([0-9]*\) new coverage edges.*/\1/p' "$work/$t.log" | tail -1)"
    printf '%-18s %8s %8s %8s %8s %8s\n' "$t" "$before" "$after" "$crashes" "${ft:-?}" "${cov:-?}"
done
