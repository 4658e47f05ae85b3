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

# A POST to the sandbox's own routes ($BASE, $TOKEN_FILE set by the caller).
sandbox_post() { # PATH JSON
    curl -sf -X POST -H "Authorization: Bearer $(cat "$TOKEN_FILE")" \
        -H 'content-type: application/json' -d "$2" "$BASE$1" >/dev/null
}

# KEYS new keys payer0.. at the default KDF cost, each funded with 100 ST; their
# addresses, one a line, in $work/payers.
new_payers() { # KEYS
    : >"$work/payers"
    local i addr
    for i in $(seq 0 $(($1 - 1))); do
        addr=$("$BIN" --json key new "payer$i" | python3 -c 'import json,sys; print(json.load(sys.stdin)["address"])')
        sandbox_post "/sandbox/v1/fund/$addr" '{"st": "100000000000000000000"}'
        echo "$addr" >>"$work/payers"
    done
}
