#!/usr/bin/env bash
# Runs every cargo-fuzz target for a time budget, one after the other, at the lowest CPU
# priority, and prints per target: executions, coverage (cov = edges, ft = features),
# corpus size and crashes. Needs nightly and cargo-fuzz (`cargo install cargo-fuzz`).
#
#   bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      (default 60 s, every target)
#   FUZZ_RUNS=10000000 bench/fuzz.sh 1800               (stop a target at N execs too)
#
# Seeds: fuzz/seed.py (key fixtures, ethereum/tests vectors, hand-written inputs) plus the
# committed regression corpus fuzz/regressions/<target>/; the campaign's corpus grows in
# fuzz/corpus/<target>/ (not committed). A crash is left in fuzz/artifacts/<target>/;
# once fixed, copy it into fuzz/regressions/<target>/ (keep its crash-<sha1> name) so that
# `cargo test -p bridgectl-fuzzing` replays it on stable. Then bench/fuzz-cmin.sh merges
# fuzz/corpus/ back into fuzz/regressions/ by coverage (cargo fuzz cmin), keeping every
# crash-* file, so the committed folder stays small; never copy fuzz/corpus/ in whole.
# Stats lines are appended to fuzz/runs.log (not committed).
#
# Built with `-s none`: the crates deny unsafe code, so AddressSanitizer finds nothing
# the Rust checks do not, and without it the targets run about twice as fast.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

budget="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/target}"

nice -n 19 cargo +nightly fuzz build -O -s none >/dev/null 2>&1 ||
    nice -n 19 cargo +nightly fuzz build -O -s none
python3 seed.py

printf '%-18s %14s %8s %8s %8s %8s\n' target execs cov ft corpus crashes
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    cp -n regressions/"$t"/* "corpus/$t/" 2>/dev/null || true
    log="$(mktemp)"
    # -max_len 65600: a key file (64 KiB cap) plus its passphrase line fits.
    nice -n 19 cargo +nightly fuzz run -O -s none "$t" "corpus/$t" -- \
        -max_total_time="$budget" -max_len=65600 -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} >"$log" 2>&1 || true
    execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
    last="$(grep -E '^#[0-9]+' "$log" | tail -1)"
    cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
    ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
    corpus="$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")"
    crashes="$(find "artifacts/$t" -type f | wc -l)"
    printf '%-18s %14s %8s %8s %8s %8s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$crashes"
    { date -u +%FT%TZ; echo "$t budget=${budget}s"; grep -E '^#[0-9]+' "$log" | tail -1
      grep -E 'stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log"; } >>runs.log
    if grep -q 'SUMMARY\|panicked' "$log"; then
        grep -m3 -E 'panicked|SUMMARY' "$log" | sed "s/^/  $t: /"
    fi
    rm -f "$log"
done
