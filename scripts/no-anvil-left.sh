#!/usr/bin/env bash
# Fails when an anvil started from this checkout's pinned tools is still running: the
# test suite must leave none behind (the sandbox kills its chains on drop, on shutdown
# and through a parent-death signal).
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "$root/scripts/none-left.sh" anvil "$root/tools/node_modules/[^ ]*anvil"
