#!/usr/bin/env bash
# Makes target/doc/<crate>/ for every crate of the workspace before `cargo doc` runs.
# rustdoc links to another crate's item only if that crate's docs are where it writes
# (it looks for the directory); cargo documents the crates in parallel, in no fixed
# order, so on a clean target a crate documented before the one it links to got its
# links printed as plain text, warning nowhere (`[bridgectl_tx::Trusted]` in the
# binary's docs; `[verify()]` on the flow crate's re-exported `Verified`). With every
# directory there from the start, every link resolves whatever the order, and
# scripts/doc-links.sh catches the links that are wrong for another reason.
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo empties target/doc when it holds no docs of this rustdoc yet (its fingerprint
# file): document one small crate first, so that what is made below stays.
# (Run with the RUSTDOCFLAGS of the `cargo doc` that follows, or it documents it again.)
cargo doc --no-deps -q -p bridgectl-json
metadata=$(cargo metadata --format-version 1 --no-deps)
doc="$(echo "$metadata" | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/doc"
echo "$metadata" | python3 -c '
import json, os, sys
doc = sys.argv[1]
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if {"lib", "bin", "proc-macro"} & set(t["kind"]):
            os.makedirs(os.path.join(doc, t["name"].replace("-", "_")), exist_ok=True)
' "$doc"
