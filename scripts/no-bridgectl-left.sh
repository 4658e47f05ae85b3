#!/usr/bin/env bash
# Fails when a bridgectl the tests started is still running (a `webhook listen`, a
# `sandbox`, a flow held at the platform, ...): every test that spawns one kills it when
# it is dropped, even when the test fails. The binary is this checkout's build, under
# CARGO_TARGET_DIR when that is set (relative to the checkout when relative).
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in
  /*) ;;
  *) target="$root/$target" ;;
esac
exec "$root/scripts/none-left.sh" bridgectl "$target/[^ /]+/bridgectl"
