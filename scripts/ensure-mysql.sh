#!/usr/bin/env bash
# Starts the machine's MariaDB if it is not answering at 127.0.0.1:3306, and makes sure the `test`
# database exists. With MYSQL_URL pointing at another server, only checks that it answers.
set -euo pipefail
ADMIN=$(command -v mariadb-admin || command -v mysqladmin)
CLIENT=$(command -v mariadb || command -v mysql)

local_target() {
  # True when MYSQL_URL is unset or names this machine's server (127.0.0.1 / localhost, port 3306).
  [ -z "${MYSQL_URL:-}" ] && return 0
  node -e '
    const u = new URL(process.env.MYSQL_URL)
    const local = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname) && (u.port || "3306") === "3306"
    process.exit(local ? 0 : 1)'
}

if ! local_target; then
  # Another server: read its host, port, user and password from the URL and wait for it.
  {
    read -r HOST
    read -r PORT
    read -r USER_
    read -r PASS
  } < <(node -e '
    const u = new URL(process.env.MYSQL_URL)
    console.log([u.hostname.replace(/^\[|\]$/g, ""), u.port || "3306", decodeURIComponent(u.username || "root"),
      decodeURIComponent(u.password)].join("\n"))')
  for _ in $(seq 1 30); do
    MYSQL_PWD="$PASS" "$ADMIN" -h "$HOST" -P "$PORT" -u "$USER_" ping >/dev/null 2>&1 && exit 0
    sleep 1
  done
  echo "MYSQL_URL does not answer" >&2
  exit 1
fi

ping_local() { "$ADMIN" -h 127.0.0.1 -P 3306 -u root ping >/dev/null 2>&1; }

if ! ping_local; then
  echo "starting MariaDB"
  mkdir -p /run/mysqld
  chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  for _ in $(seq 1 30); do ping_local && break; sleep 1; done
fi
"$ADMIN" -h 127.0.0.1 -P 3306 -u root ping
"$CLIENT" -h 127.0.0.1 -P 3306 -u root -e 'CREATE DATABASE IF NOT EXISTS test'
