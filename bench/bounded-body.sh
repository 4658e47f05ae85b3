#!/usr/bin/env bash
# A platform that answers the action call with 512 MiB: bridgectl must refuse the answer
# once MAX_BODY_BYTES (1 MiB) is read, say so, and stay small. Prints the error and the
# peak RSS measured by /usr/bin/time -v (the goal: under 64 MiB; before the cap it was
# 539 MiB).
#
#   bench/bounded-body.sh [debug|release]     (default debug: its RSS is the larger)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-debug}"
if [ "$profile" = release ]; then cargo build --quiet --release; else cargo build --quiet; fi
BIN="${CARGO_TARGET_DIR:-target}/$profile/bridgectl"
WORK="$(mktemp -d)"
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

# The stub: every request gets 200, no Content-Length, and 512 MiB of body.
python3 - "$WORK/port" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
chunk = b"a" * (1 << 16)
while True:
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(65536)
        if not d: break
        head += d
    try:
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"data\":\"")
        sent = 0
        while sent < 512 << 20:
            c.sendall(chunk); sent += len(chunk)
    except OSError:
        pass
    c.close()
PY
SERVER=$!
for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
PORT="$(cat "$WORK/port")"

mkdir -p "$WORK/config/bridgectl"
cat >"$WORK/config/bridgectl/config.toml" <<TOML
[profiles.default]
base_url = "http://127.0.0.1:$PORT"
main_environment_id = "main-env"
side_environment_id = "side-env"
main_symbol = "MT"
side_symbol = "ST"
main_decimals = 18
side_decimals = 18
mt_contract = "0x3535353535353535353535353535353535353535"
st_contract = "0x3636363636363636363636363636363636363636"
main_chain_id = 31337
side_chain_id = 31338
redeem_action = "redeem"
TOML
printf 'pw\n' >"$WORK/pw"; chmod 600 "$WORK/pw"
export XDG_CONFIG_HOME="$WORK/config" BRIDGECTL_KEYSTORE="$WORK/keys" \
    BRIDGECTL_JOURNAL="$WORK/journal.sqlite3" BRIDGECTL_PASSPHRASE_FILE="$WORK/pw" \
    BRIDGECTL_ACCESS_TOKEN=bench-token BRIDGECTL_RETRIES=0
echo 0x4646464646464646464646464646464646464646464646464646464646464646 |
    "$BIN" key import k --raw --unsafe-test-kdf >/dev/null

set +e
/usr/bin/time -v "$BIN" redeem --from 0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F \
    --amount 1 --yes >"$WORK/out" 2>"$WORK/err"
code=$?
set -e
echo "exit code: $code"
grep '^error' "$WORK/err" || true
grep -E 'Maximum resident set size|Elapsed \(wall clock\)' "$WORK/err"
rss_kib="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/err")"
echo "peak RSS: $((rss_kib / 1024)) MiB (goal < 64 MiB)"
