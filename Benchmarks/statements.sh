#!/usr/bin/env bash
# Statements (round trips) PostgreSQL runs per flow for one or more `mauth` builds, counted by PostgreSQL itself
# (pg_stat_statements, which counts BEGIN and COMMIT too when track_utility is on, its default).
#
#   Benchmarks/statements.sh POSTGRES_URL MAUTH [MAUTH ...]
#
# The PostgreSQL server must load the extension (`shared_preload_libraries = 'pg_stat_statements'`); the script
# creates it in a schema of its own (pgss) and empties the database's public schema before each run. For each build
# and flow (FLOWS, default "authentication passkey") it starts INSTANCES servers (default 2) on the database, runs
# `mauth load --url` with 200 users registered and FEW flows, then again from an empty database with FEW + MANY
# flows, and prints (statements of the second run - statements of the first) / MANY: the measured phase's
# statements per flow, without the registrations and the servers' start. The background purge may add one or two
# statements over the whole run. Beside it, the same difference of the transaction ids PostgreSQL handed out: one per
# transaction that wrote, each of which waits for its log to reach the disk when it commits (synchronous_commit on,
# the default), where a read does not.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/common.sh
DATABASE="$1"; shift
INSTANCES="${INSTANCES:-2}"; FLOWS="${FLOWS:-authentication passkey}"; FEW=20; MANY=2000
WORK="$(mktemp -d /tmp/mauth-statements.XXXXXX)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; } || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
psql "$DATABASE" -qc "SET client_min_messages = warning; CREATE SCHEMA IF NOT EXISTS pgss; CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA pgss" >/dev/null
make_measuring_server_files "$WORK" statements
# Statements the database ran since the last reset, but the script's own.
statements() {
    psql "$DATABASE" -tAc "SELECT COALESCE(SUM(calls), 0) FROM pgss.pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT ILIKE '%pg_stat_statements%' AND query NOT ILIKE '%pg_database%'"
}
# The next transaction id, read without taking one.
next_xid() { psql "$DATABASE" -tAc "SELECT txid_snapshot_xmax(txid_current_snapshot())"; }
# One run of `flows` flows of `flow` by `binary`, from an empty database; prints the statements and the transaction
# ids it took.
run() {
    local binary="$1" flow="$2" flows="$3" urls=() server_pids=()
    psql "$DATABASE" -qc "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1
    for _ in $(seq 1 "$INSTANCES"); do
        start_measuring_server statements "$binary" "$WORK" "$DATABASE"
        PIDS+=("$MEASURED_PID"); urls+=(--url "https://127.0.0.1:$MEASURED_PORT")
    done
    psql "$DATABASE" -tAc "SELECT pgss.pg_stat_statements_reset()" >/dev/null
    local first_xid; first_xid=$(next_xid)
    "$NEW_LOAD" load "${urls[@]}" --ca-file "$WORK/tls.pem" --relying-party-key "$WORK/rp.pem" --flow "$flow" \
        --users 200 --connections 8 --flows "$flows" --quiet >"$WORK/run.txt" 2>&1 \
        || { echo "statements: $flow failed" >&2; cat "$WORK/run.txt" >&2; exit 1; }
    echo "$(statements) $(($(next_xid) - first_xid))"
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
    PIDS=()
}
NEW_LOAD="${!#}"   # the last build drives every run, so only the server differs
printf "%-40s %-15s %-16s %s\n" build flow statements/flow "writing transactions/flow"
for binary in "$@"; do
    for flow in $FLOWS; do
        out=$(run "$binary" "$flow" "$FEW"); read -r few few_xids <<<"$out"
        out=$(run "$binary" "$flow" $((FEW + MANY))); read -r many many_xids <<<"$out"
        printf "%-40s %-15s %-16.2f %.2f\n" "$binary" "$flow" "$(echo "($many - $few) / $MANY" | bc -l)" \
            "$(echo "($many_xids - $few_xids) / $MANY" | bc -l)"
    done
done
