#!/usr/bin/env bash
# Starts the machine's PostgreSQL if it is not answering, and makes sure the `test` database exists.
# With DATABASE_URL set, only checks that it answers.
set -euo pipefail
if [ -n "${DATABASE_URL:-}" ]; then
  for _ in $(seq 1 30); do node -e "
    const pg = require('pg'); const c = new pg.Client(process.env.DATABASE_URL)
    c.connect().then(() => c.end()).then(() => process.exit(0), () => process.exit(1))" 2>/dev/null && exit 0; sleep 1; done
  echo "DATABASE_URL does not answer" >&2; exit 1
fi
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test'
