# shellcheck shell=bash
# Shared by the end-to-end benchmarks: starts `bridgectl sandbox` (release binary $BIN)
# in the background with its profile written to $work/config.toml and its JSON info in
# $work/sandbox.json, sets $sb_pid, and points bridgectl at that profile.
start_sandbox() {
    "$BIN" --json sandbox --write-profile "$work/config.toml" >"$work/sandbox.json" 2>"$work/sandbox.err" &
    sb_pid=$!
    for _ in $(seq 300); do [ -s "$work/sandbox.json" ] && break; sleep 0.1; done
    [ -s "$work/sandbox.json" ] || { cat "$work/sandbox.err"; exit 1; }
    export BRIDGECTL_CONFIG="$work/config.toml" BRIDGECTL_PROFILE=sandbox
}
