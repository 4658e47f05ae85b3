#!/usr/bin/env bash
# Usage: none-left.sh LABEL PATTERN: fails when a process whose command line matches the
# extended regex PATTERN (anchored at the start) is still running after the tests. Used by
# no-anvil-left.sh, no-postgres-left.sh and no-bridgectl-left.sh; a pattern starting with a path
# never matches this script's own shell.
set -u
label=$1
pattern=$2
# Give processes killed at the very end of the suite a moment to exit.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  pids=$(pgrep -f "^$pattern( |$)") || { echo "no $label left running"; exit 0; }
  sleep 0.3
done
echo "$label processes left running after the tests:"
ps -o pid,args -p "$(echo "$pids" | paste -sd,)"
exit 1
