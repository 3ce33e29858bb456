#!/usr/bin/env bash
# Makes the tests' PostgreSQL ready for the WAL transport (docs/wal.md): wal_level = logical and
# replication lines in pg_hba.conf. Idempotent: when both are already there it changes nothing and
# restarts nothing. Run by .ci/run after ensure-postgres.sh and by the tests' vitest globalSetup;
# by hand: `bash scripts/ensure-wal.sh`.
#
# - wal_level: `ALTER SYSTEM SET wal_level = logical`, then ONE restart
#   (`pg_ctlcluster --skip-systemctl-redirect <version> <cluster> restart -m fast`, the cluster
#   that serves DATABASE_URL's port: `main` on this machine), only when the
#   running value is not already logical. A restart cuts every open connection on that server.
# - max_replication_slots and max_wal_senders: at least 32 each (PostgreSQL's default is 10), set
#   with ALTER SYSTEM in the same single restart. Test files that run at once each hold slots
#   (an outbox's pgoutput slot, a test_decoding slot of the publish suites, a relay's walsender):
#   10 is too few for them together, and a slot that cannot be created fails a test at once.
# - pg_hba.conf: adds `host replication all 127.0.0.1/32 trust` and `local replication all trust`
#   when missing, then reloads (no restart).
# - Only for a server on this machine (DATABASE_URL's host 127.0.0.1/localhost, or the default
#   postgres://postgres@127.0.0.1:5432/test) that we may administer (root or the postgres user).
#   For any other server it only reports what is missing.
# Prints what it did on stderr; exit 1 with the reason when the server cannot be made ready.
set -euo pipefail
URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
say() { echo "[outboxkit] [wal] $*" >&2; }
q() { psql "$URL" -X -qtAc "$1"; }

wal_level=$(q 'SHOW wal_level') || { say "cannot connect to $URL"; exit 1; }
host=$(node -e 'console.log(new URL(process.argv[1]).hostname)' "$URL")
local_server=false
case $host in 127.0.0.1 | localhost | '[::1]' | ::1) local_server=true ;; esac
hba_ok=$(q "SELECT count(*) >= 1 FROM pg_hba_file_rules WHERE 'replication' = ANY(database) AND error IS NULL AND (type = 'local' OR address = '127.0.0.1')")

# What the tests need at least (see above).
MIN_SLOTS=32
slots_ok=$(q "SELECT current_setting('max_replication_slots')::int >= $MIN_SLOTS AND current_setting('max_wal_senders')::int >= $MIN_SLOTS")

if [ "$wal_level" = logical ] && [ "$hba_ok" = t ] && [ "$slots_ok" = t ]; then exit 0; fi
if [ "$local_server" != true ] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
  say "PostgreSQL at $host has wal_level=$wal_level, replication lines in pg_hba.conf: $hba_ok, at least $MIN_SLOTS replication slots and WAL senders: $slots_ok; the WAL transport needs wal_level=logical and a replication line (see docs/wal.md), and the tests $MIN_SLOTS slots and senders. Not a server this script manages: change it by hand."
  exit 1
fi
version=$(q "SELECT current_setting('server_version_num')::int / 10000")
port=$(q 'SHOW port')
# The cluster that serves this port (the machine's is `main` on 5432).
cluster=$(pg_lsclusters -h 2>/dev/null | awk -v v="$version" -v p="$port" '$1 == v && $3 == p { print $2; exit }')
cluster=${cluster:-main}
restart=false
if [ "$hba_ok" != t ]; then
  hba=$(q 'SHOW hba_file')
  grep -Eq '^[[:space:]]*host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32' "$hba" \
    || printf 'host    replication     all             127.0.0.1/32            trust\n' >>"$hba"
  grep -Eq '^[[:space:]]*local[[:space:]]+replication[[:space:]]+all' "$hba" \
    || printf 'local   replication     all                                     trust\n' >>"$hba"
  say "added replication lines to $hba"
  q 'SELECT pg_reload_conf()' >/dev/null
fi
changes=()
if [ "$wal_level" != logical ]; then
  q 'ALTER SYSTEM SET wal_level = logical' >/dev/null
  changes+=("wal_level $wal_level -> logical")
fi
if [ "$slots_ok" != t ]; then
  for setting in max_replication_slots max_wal_senders; do
    current=$(q "SHOW $setting")
    if [ "$current" -lt "$MIN_SLOTS" ]; then
      q "ALTER SYSTEM SET $setting = $MIN_SLOTS" >/dev/null
      changes+=("$setting $current -> $MIN_SLOTS")
    fi
  done
fi
if [ "${#changes[@]}" -gt 0 ]; then
  say "set ${changes[*]}: restarting PostgreSQL $version (cluster $cluster, port $port)"
  pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" restart -m fast
  restart=true
fi
for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p "$port" -q && break; sleep 1; done
[ "$(q 'SHOW wal_level')" = logical ] || { say "wal_level is still not logical after the restart"; exit 1; }
[ "$(q "SELECT current_setting('max_replication_slots')::int >= $MIN_SLOTS AND current_setting('max_wal_senders')::int >= $MIN_SLOTS")" = t ] \
  || { say "max_replication_slots or max_wal_senders is still under $MIN_SLOTS after the restart"; exit 1; }
[ "$restart" = true ] && say "PostgreSQL restarted with wal_level=logical, at least $MIN_SLOTS replication slots and WAL senders"
exit 0
