#!/usr/bin/env bash
# The circle check on scripts/circles-fixtures/: one small crate per case, its README
# says what it holds. A `fail_` crate must fail and print the circle its `circle` file
# names; any other must pass. So a path the check stops reading (an attribute, a serde
# string, a module imported by name, a type another crate defines re-exported by a
# module) fails here before it hides a circle in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
failed=0
for case in scripts/circles-fixtures/*/; do
    name=$(basename "$case")
    if out=$(./scripts/no-import-circles.sh "$case/src" 2>&1); then
        if [[ $name == fail_* ]]; then
            echo "$name: no circle found, expected: $(cat "$case/circle")" >&2
            failed=1
        fi
    elif [[ $name != fail_* ]]; then
        echo "$name: a circle found where there is none:" >&2
        echo "$out" >&2
        failed=1
    elif ! grep -qxF "$(cat "$case/circle")" <<<"$out"; then
        echo "$name: expected $(cat "$case/circle"), found:" >&2
        echo "$out" >&2
        failed=1
    fi
done
if [ "$failed" = 0 ]; then
    echo "circle check: $(ls -d scripts/circles-fixtures/*/ | wc -l) fixture crates as expected"
fi
exit "$failed"
