#!/bin/bash
# Fills the database of `mauth server` (created by the server, so its schema is there; the server stopped) with the
# rows an hour of logins leaves behind under the default lifetimes, so that a `mauth load` run meets the steady
# state of a long-running server: big session and status tables whose oldest rows expire, and are purged, while it
# runs.
#
#   Benchmarks/steady-state-fixture.sh DATABASE [LOGINS_PER_SECOND] [SECONDS_BEFORE_THE_FIRST_EXPIRY]
#
# DATABASE is an SQLite file (needs the sqlite3 command) or a postgres:// URL, as `mauth server --database` takes it
# (needs psql). Rows: an hour of sessions (sessionLifetimeSeconds 3600) and ten minutes of status records
# (statusRetentionSeconds 600) at LOGINS_PER_SECOND (default 1300), for users other than the load's; their first rows
# expire SECONDS_BEFORE_THE_FIRST_EXPIRY after this script starts (default 150: the script and the start of the run
# take about a minute or two). Keys start with their creation time as the server makes them (OrderedToken);
# KEYS=random gives purely random keys instead (servers before OrderedToken).
set -euo pipefail
DATABASE=$1; RATE=${2:-1300}; LEAD=${3:-150}
NOW=$(( $(date +%s%3N) + LEAD * 1000 ))
SESSIONS=$(( RATE * 3600 )); STATUSES=$(( RATE * 600 ))
case "$DATABASE" in
postgres://*|postgresql://*)
  command -v psql >/dev/null || { echo "needs the psql command" >&2; exit 1; }
  psql -q "$DATABASE" -c "SELECT 1 FROM sessions LIMIT 0" >/dev/null 2>&1 || { echo "$DATABASE has no sessions table: start mauth server on it once first" >&2; exit 1; }
  if [ "${KEYS:-ordered}" = random ]; then CREATED="''"; UPDATED="''"; else CREATED="lpad(to_hex(created), 12, '0')"; UPDATED="lpad(to_hex(updated), 12, '0')"; fi
  HEX="replace(gen_random_uuid()::text, '-', '')"   # 32 random hex digits (PostgreSQL 13 and later)
  psql -q -v ON_ERROR_STOP=1 "$DATABASE" >/dev/null <<SQL
BEGIN;
INSERT INTO sessions (token_hash, id, username, aaid, key_id, created_at, expires_at)
SELECT $CREATED || $HEX || $HEX, $CREATED || $HEX, 'steady-' || (random() * 100000)::bigint, 'F1D0#1001',
       $HEX || $HEX, created, created + 3600000
FROM (SELECT $NOW - 3600000 + i * 3600000 / $SESSIONS AS created FROM generate_series(0::bigint, $SESSIONS - 1) AS i) AS n;
INSERT INTO status_records (session_id, status, username, operation, uaf_status_code, authenticators, updated_at, expires_at)
SELECT $UPDATED || $HEX || substr($HEX, 1, 16), 'succeeded', 'steady-' || (random() * 100000)::bigint, 'Auth', 1200, '[]',
       updated, updated + 600000
FROM (SELECT $NOW - 600000 + i * 600000 / $STATUSES AS updated FROM generate_series(0::bigint, $STATUSES - 1) AS i) AS n;
COMMIT;
VACUUM ANALYZE sessions;
VACUUM ANALYZE status_records;
SQL
  ;;
*)
  command -v sqlite3 >/dev/null || { echo "needs the sqlite3 command" >&2; exit 1; }
  [ -f "$DATABASE" ] && sqlite3 "$DATABASE" "SELECT 1 FROM sessions LIMIT 0" >/dev/null 2>&1 || { echo "$DATABASE has no sessions table: start mauth server on it once first" >&2; exit 1; }
  if [ "${KEYS:-ordered}" = random ]; then CREATED="''"; UPDATED="''"; else CREATED="printf('%012x', created)"; UPDATED="printf('%012x', updated)"; fi
  sqlite3 "$DATABASE" >/dev/null <<SQL
PRAGMA cache_size = -1000000;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $SESSIONS - 1)
INSERT INTO sessions (token_hash, id, username, aaid, key_id, created_at, expires_at)
SELECT $CREATED || hex(randomblob(32)), $CREATED || hex(randomblob(16)), 'steady-' || (abs(random()) % 100000), 'F1D0#1001',
       hex(randomblob(32)), created, created + 3600000
FROM (SELECT $NOW - 3600000 + i * 3600000 / $SESSIONS AS created FROM n);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $STATUSES - 1)
INSERT INTO status_records (session_id, status, username, operation, uaf_status_code, authenticators, updated_at, expires_at)
SELECT $UPDATED || hex(randomblob(24)), 'succeeded', 'steady-' || (abs(random()) % 100000), 'Auth', 1200, '[]', updated, updated + 600000
FROM (SELECT $NOW - 600000 + i * 600000 / $STATUSES AS updated FROM n);
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
  ;;
esac
echo "$DATABASE: $SESSIONS sessions and $STATUSES status records; the first expire at $(date -d @$(( NOW / 1000 )) +%T)"
