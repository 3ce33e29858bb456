#!/usr/bin/env bash
# Makes sure a PgBouncer in transaction mode runs in front of the tests' PostgreSQL, and prints its
# URL (the upstream URL with host 127.0.0.1 and PgBouncer's port) as the one line on stdout;
# everything else goes to stderr. Idempotent: when ours already runs with the same configuration it
# only checks that it answers. Run by the tests' vitest globalSetup (so `pnpm test` and .ci/run get
# it); by hand: `bash scripts/ensure-pgbouncer.sh`.
#
# - Upstream: DATABASE_URL (host, port, user, password, database), else postgres://postgres@127.0.0.1:5432/test.
# - PgBouncer: installed from the OS packages when missing (Debian's is 1.18; needs root and
#   apt-get), run as the `postgres` OS user when we are root (PgBouncer refuses to run as root),
#   listening on 127.0.0.1 at PGBOUNCER_PORT (default 6432, or the next free port when another
#   program holds it). Its ini, userlist, pid and log live in OUTBOXKIT_PGBOUNCER_DIR
#   (default /tmp/outboxkit-pgbouncer).
# - pool_mode = transaction and default_pool_size = 3, smaller than the tests' concurrency, so
#   anything session-bound (a named prepared statement, a session SET, LISTEN) shows up as a
#   failure; ignore_startup_parameters stays at PgBouncer's default for the same reason. A reserve
#   of 2 connections, for clients that waited 5 s, keeps pinned test transactions from deadlocking.
# Exit 1, with the reason on stderr, when PgBouncer cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${OUTBOXKIT_PGBOUNCER_DIR:-/tmp/outboxkit-pgbouncer}
PREFERRED_PORT=${PGBOUNCER_PORT:-6432}
say() { echo "[outboxkit] [pgbouncer] $*" >&2; }
fail() {
  say "$*"
  exit 1
}

# The upstream as lines: host, port, user, password, database.
{
  read -r UP_HOST
  read -r UP_PORT
  read -r UP_USER
  read -r UP_PASS
  read -r UP_DB
} < <(node -e '
  const u = new URL(process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test")
  const d = (s) => decodeURIComponent(s)
  console.log([u.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1", u.port || "5432", d(u.username) || "postgres",
    d(u.password), d(u.pathname.slice(1)) || "postgres"].join("\n"))')
for v in "$UP_USER" "$UP_PASS" "$UP_DB"; do
  case $v in *'"'* | *"'"* | *' '* | *'\'*) fail "DATABASE_URL has a user, password or database with a quote, space or backslash: not supported here" ;; esac
done

PGBOUNCER=$(command -v pgbouncer || { [ -x /usr/sbin/pgbouncer ] && echo /usr/sbin/pgbouncer; } || true)
if [ -z "$PGBOUNCER" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    fail "pgbouncer is not installed, and installing it needs root and apt-get (Debian/Ubuntu: apt-get install pgbouncer)"
  fi
  say "installing PgBouncer from the OS packages (apt-get install pgbouncer)"
  mkdir -p "$DIR"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer; } >"$DIR/apt.log" 2>&1; then
    fail "apt-get install pgbouncer failed (see $DIR/apt.log): $(tail -n 3 "$DIR/apt.log" | tr '\n' ' ')"
  fi
  PGBOUNCER=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  [ -x "$PGBOUNCER" ] || fail "apt-get installed pgbouncer but no pgbouncer program was found"
fi

if [ "$(id -u)" = 0 ]; then
  getent passwd postgres >/dev/null || fail "PgBouncer refuses to run as root, and there is no postgres OS user to run it as"
  RUN_AS=(runuser -u postgres --)
  OWNER=postgres
else
  RUN_AS=()
  OWNER=$(id -un)
fi
mkdir -p "$DIR"
chown "$OWNER" "$DIR"
chmod 700 "$DIR"

# One setup at a time (two test runs starting together).
exec 9>"$DIR/.lock"
flock -w 60 9 || fail "another ensure-pgbouncer.sh holds $DIR/.lock"

INI="$DIR/pgbouncer.ini"
PIDFILE="$DIR/pgbouncer.pid"
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
running_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

config_for() {
  local upstream="host=$UP_HOST port=$UP_PORT"
  cat <<EOF
;; Written by scripts/ensure-pgbouncer.sh (outboxkit tests); rewritten when it changes.
[databases]
test = $upstream dbname=test
postgres = $upstream dbname=postgres
$([ "$UP_DB" != test ] && [ "$UP_DB" != postgres ] && echo "$UP_DB = $upstream dbname=$UP_DB")

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $1
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 3
;; A safety net, not more capacity: a client that waited 5 s (test files running side by side,
;; each keeping a refused transaction open until its teardown) gets one of 2 extra connections.
reserve_pool_size = 2
reserve_pool_timeout = 5
max_client_conn = 2000
pidfile = $PIDFILE
logfile = $DIR/pgbouncer.log
log_connections = 0
log_disconnections = 0
EOF
}

# Ours already runs: keep it when its configuration is the one we want (same port).
if pid=$(running_pid); then
  port=$(sed -n 's/^listen_port = //p' "$INI" 2>/dev/null || true)
  if [ -n "$port" ] && [ "$(config_for "$port")" = "$(cat "$INI")" ] && answers "$port"; then
    STARTED_PORT=$port
  else
    say "restarting PgBouncer (its configuration changed)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
fi

if [ -z "${STARTED_PORT:-}" ]; then
  port=$PREFERRED_PORT
  while answers "$port"; do
    port=$((port + 1))
    [ "$port" -le $((PREFERRED_PORT + 20)) ] || fail "no free port in $PREFERRED_PORT..$((PREFERRED_PORT + 20))"
  done
  config_for "$port" >"$INI"
  printf '"%s" "%s"\n' "$UP_USER" "$UP_PASS" >"$DIR/userlist.txt"
  [ "$UP_USER" = postgres ] || printf '"postgres" ""\n' >>"$DIR/userlist.txt"
  chown "$OWNER" "$INI" "$DIR/userlist.txt"
  chmod 600 "$INI" "$DIR/userlist.txt"
  rm -f "$PIDFILE"
  touch "$DIR/pgbouncer.log"
  chown "$OWNER" "$DIR/pgbouncer.log"
  # Room for max_client_conn (the soft limit is often 1024).
  ulimit -n 4096 2>/dev/null || true
  "${RUN_AS[@]}" "$PGBOUNCER" -d -q "$INI" 2>"$DIR/start.err" 9>&- \
    || fail "PgBouncer did not start: $(cat "$DIR/start.err") $(tail -n 3 "$DIR/pgbouncer.log" | tr '\n' ' ')"
  for _ in $(seq 1 50); do answers "$port" && break; sleep 0.1; done
  answers "$port" || fail "PgBouncer started but does not answer on 127.0.0.1:$port (see $DIR/pgbouncer.log)"
  say "PgBouncer $("$PGBOUNCER" --version | head -n 1 | sed 's/^PgBouncer //') runs on 127.0.0.1:$port (transaction mode, pool 3) in front of $UP_HOST:$UP_PORT"
  STARTED_PORT=$port
fi

URL=$(UP_USER="$UP_USER" UP_PASS="$UP_PASS" UP_DB="$UP_DB" PORT="$STARTED_PORT" node -e '
  const e = process.env, auth = encodeURIComponent(e.UP_USER) + (e.UP_PASS ? ":" + encodeURIComponent(e.UP_PASS) : "")
  console.log(`postgres://${auth}@127.0.0.1:${e.PORT}/${encodeURIComponent(e.UP_DB)}`)')
# It must route to the server, not only accept connections.
URL="$URL" node -e '
  const pg = require("pg"), c = new pg.Client({ connectionString: process.env.URL, connectionTimeoutMillis: 5000 })
  c.connect().then(() => c.query("SELECT 1")).then(() => c.end()).then(() => process.exit(0), (e) => {
    console.error(e.message); process.exit(1) })' >&2 \
  || fail "PgBouncer on 127.0.0.1:$STARTED_PORT answers but cannot reach PostgreSQL at $UP_HOST:$UP_PORT"
echo "$URL"
