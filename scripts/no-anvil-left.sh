#!/usr/bin/env bash
# Fails when an anvil started from this checkout's pinned tools is still running: the
# test suite must leave none behind (the sandbox kills its chains on drop, on shutdown
# and through a parent-death signal).
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
# Give processes killed at the very end of the suite a moment to exit.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  pids=$(pgrep -f "^$root/tools/node_modules/[^ ]*anvil( |$)") || { echo "no anvil left running"; exit 0; }
  sleep 0.3
done
echo "anvil processes left running after the tests:"
ps -o pid,args -p "$(echo "$pids" | paste -sd,)"
exit 1
