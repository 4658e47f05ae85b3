#!/usr/bin/env bash
# Links of ours that rustdoc left unresolved without a warning. A doc comment is checked
# where it is written, but shown in other places too: a re-export in another crate, a
# trait's item on each implementor's page. Where its path means nothing (`crate::X` on
# the page of an implementor in another crate), rustdoc prints the link as text, in
# brackets, and warns nowhere, so `-D warnings` cannot catch it. This looks for such
# text in the pages of our own crates after `cargo doc`: a path of ours
# (`crate::`, `self::`, `super::`, `Self::`, `bridgectl_*::`) or a function (`verify()`).
# Write such links as paths that hold wherever the doc is shown, or keep the first
# paragraph (what implementors' pages show) free of links. A link through a re-exported
# crate (`crate::http::X` for `pub use bridgectl_http as http`) resolves or not by the
# order cargo documents the crates in: name the crate itself (`bridgectl_http::X`).
# That order differs between a fresh target dir and a warm one; `make doc` builds every
# page afresh (it removes them first) and scripts/doc-dirs.sh makes every crate's
# directory before any is documented, so each run checks links as a fresh clone gets them.
set -euo pipefail
cd "$(dirname "$0")/.."
doc="${1:-$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/doc}"
[ -d "$doc" ] || { echo "no docs in $doc: run cargo doc first" >&2; exit 1; }
pattern='\[<code>((crate|self|super|Self|bridgectl_[a-z0-9_]+)::[^<]*|[a-z_][a-z0-9_]*\(\))</code>\]'
if found=$(grep -rEo --include='*.html' "$pattern" "$doc"/bridgectl*/ | sort -u) && [ -n "$found" ]; then
    echo "unresolved doc links (shown as text where the doc is shown):" >&2
    echo "$found" | sed "s|^$doc/||" >&2
    exit 1
fi
echo "doc links: every link of ours resolves where it is shown"
