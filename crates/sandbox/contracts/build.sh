#!/bin/sh
# Rebuilds the committed contract artifacts (artifacts/<Name>.json: {abi, bytecode}) from the
# Solidity sources in this folder with the pinned npm package `solc` (0.8.37) that
# `make tools` installs into <repo>/tools/node_modules.
#
# Usage: crates/sandbox/contracts/build.sh [OUT_DIR]   (default: this folder's artifacts/)
# The test `artifacts_match_sources` runs it into a temp dir and compares byte for byte.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
[ -f "$repo/tools/node_modules/solc/package.json" ] || {
    echo "the pinned solc is missing from $repo/tools/node_modules: run \`make tools\`" >&2
    exit 1
}
exec node "$here/build.js" "$@"
