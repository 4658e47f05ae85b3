#!/usr/bin/env bash
# The key-write crash test at full length: RUNS runs (default 2000) of `key new`,
# `passwd`, `import`, `export` and `rm`, each SIGKILLed after a delay that adapts to
# where its writes are, then checks that every key is intact, none was lost, no removed
# key came back and no temp file was ever taken for a key, and that at least a fifth of
# the kills landed during the writes. It prints how many kills landed before, during and
# after the writes. CI runs the same test with 150 runs.
#
#   bench/crash-keys.sh [RUNS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
export BRIDGECTL_CRASH_RUNS="${1:-2000}"
if [ -n "${2:-}" ]; then export BRIDGECTL_CRASH_SEED="$2"; fi
start=$(date +%s)
nice -n 19 cargo test --quiet -p bridgectl --test integration \
    key::crash_test_sigkill_during_writes -- --exact --nocapture 2>&1 |
    grep -E 'crash test|test result|panicked|lost|listed|came back|partial|landed'
echo "elapsed: $(( $(date +%s) - start )) s"
