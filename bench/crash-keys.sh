#!/usr/bin/env bash
# The key-write crash test at full length: SIGKILLs at random moments during `key new`,
# `passwd`, `import`, `export` and `rm` until KILLS of them landed mid-run (default
# 1000), then checks that every key is intact, none was lost, no removed key came back
# and no temp file was ever taken for a key. CI runs the same test with 200 kills.
#
#   bench/crash-keys.sh [KILLS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
export BRIDGECTL_CRASH_KILLS="${1:-1000}"
if [ -n "${2:-}" ]; then export BRIDGECTL_CRASH_SEED="$2"; fi
start=$(date +%s)
nice -n 19 cargo test --quiet -p bridgectl --test integration \
    key::crash_test_sigkill_during_writes -- --exact --nocapture 2>&1 |
    grep -E 'crash test|test result|panicked|lost|listed|came back|partial'
echo "elapsed: $(( $(date +%s) - start )) s"
