#!/usr/bin/env bash
# Server CPU per flow of two `mauth` builds, in alternated runs (old, new, old, new, …): the UAF login, the passkey
# sign-in and the baseline (two GET /health/live), and each flow's ratio to the baseline of the same run. The machine
# drifts 10–25 % within the hour, so only figures measured side by side are compared.
#
#   Benchmarks/ratios.sh OLD_MAUTH NEW_MAUTH [ROUNDS] [SECONDS] [DATABASE]
#
# Each run starts one `mauth server` of the build on loopback (a new SQLite file, or DATABASE, a postgres:// URL whose
# database is emptied first; with INSTANCES=2 two servers share it), registers 2,000 users, and loads it with
# `mauth load --url` of NEW_MAUTH (the same generator for both builds) over 32 connections for SECONDS per flow.
# Prints one line per run and flow: server CPU per flow (ms), PostgreSQL's (every process named `postgres`, its
# sessions and background workers, over the measured phase; on SQLite a dash), the machine's (the generator and the
# database included), flows/s, and the ratio of the server CPU to the run's baseline. Then, per flow, the new build's
# server CPU over the old one's in each round (the two runs next to each other, so the drift between rounds cancels)
# and their geometric mean: a change is kept only when every round, or nearly every one, moves the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/common.sh
OLD="$1"; NEW="$2"; ROUNDS="${3:-2}"; SECONDS_PER_FLOW="${4:-10}"; DATABASE="${5:-}"; INSTANCES="${INSTANCES:-1}"
FLOWS="${FLOWS:-baseline authentication passkey}"
WORK="$(mktemp -d /tmp/mauth-ratios.XXXXXX)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; } || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
make_measuring_server_files "$WORK" ratios

WATCH_DATABASE=(); [ -n "$DATABASE" ] && WATCH_DATABASE=(--database-process postgres)

printf "%-5s %-4s %-15s %14s %16s %15s %9s %8s\n" round build flow server_ms/flow database_ms/flow machine_ms/flow flows/s ratio
for round in $(seq 1 "$ROUNDS"); do
    for build in old new; do
        binary="$OLD"; [ "$build" = new ] && binary="$NEW"
        database="$DATABASE"
        if [ -z "$database" ]; then database="$WORK/$round-$build.sqlite"; else
            psql "$database" -qc "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1; fi
        urls=(); server_pids=()
        for instance in $(seq 1 "$INSTANCES"); do
            start_measuring_server ratios "$binary" "$WORK" "$database"
            PIDS+=("$MEASURED_PID"); server_pids+=(--server-pid "$MEASURED_PID"); urls+=(--url "https://127.0.0.1:$MEASURED_PORT")
        done
        baseline=""
        for flow in $FLOWS; do
            "$NEW" load "${urls[@]}" --ca-file "$WORK/tls.pem" --relying-party-key "$WORK/rp.pem" --flow "$flow" \
                --users 2000 --connections 32 --duration "$SECONDS_PER_FLOW" "${server_pids[@]}" "${WATCH_DATABASE[@]}" --json --quiet \
                >"$WORK/run.json" 2>"$WORK/run.err" || { echo "ratios: $flow failed"; cat "$WORK/run.err"; exit 1; }
            line=$(python3 - "$WORK/run.json" "$round" "$build" "$flow" "$baseline" <<'PY'
import json, sys
measured = json.load(open(sys.argv[1]))["measured"]
servers = [p for p in measured["cpu"]["processes"] if p["role"] != "load generator"]
cpu = sum(p["millisecondsPerFlow"] for p in servers)
ratio = f"{cpu / float(sys.argv[5]):.2f}" if sys.argv[5] else ("1" if sys.argv[4] == "baseline" else "-")
failed = f"  ({measured['failedFlows']} failed)" if measured["failedFlows"] else ""
machine = measured["cpu"].get("machineMillisecondsPerFlow") or 0
database = measured["cpu"].get("database")
database = f"{database['millisecondsPerFlow']:16.3f}" if database else f"{'-':>16}"
print(f"{sys.argv[2]:<5} {sys.argv[3]:<4} {sys.argv[4]:<15} {cpu:14.3f} {database} {machine:15.3f} {measured['flowsPerSecond']:9.0f} {ratio:>8}{failed}|{cpu}")
PY
)
            echo "${line%|*}"
            echo "$round $build $flow ${line#*|}" >>"$WORK/cpu.txt"
            [ "$flow" = baseline ] && baseline="${line#*|}"
        done
        for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
        PIDS=()
    done
done
python3 - "$WORK/cpu.txt" <<'PY'
import math, sys
cpu = {}
for line in open(sys.argv[1]):
    round_, build, flow, value = line.split()
    cpu[(flow, round_, build)] = float(value)
print("new / old server CPU per round, and the geometric mean")
for flow in dict.fromkeys(flow for flow, _, _ in cpu):
    ratios = [cpu[(f, r, "new")] / cpu[(f, r, "old")] for (f, r, b) in cpu if f == flow and b == "old" and (f, r, "new") in cpu]
    mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"{flow:<15} {' '.join(f'{x:.3f}' for x in ratios)}  mean {mean:.3f}")
PY
