#!/usr/bin/env bash
# One `mauth server` on SQLite at full authentication load for MINUTES minutes (default 60): does it stay flat?
# Each login opens a session kept for SESSION_SECONDS (default 300, the server's default is 3,600): the database
# holds a session lifetime's worth of sessions and is flat once the oldest expire as fast as new ones come.
#
# The load is MINUTES back-to-back `mauth load --url` runs of 58 s (each registers 1,000 new users first, so the
# population grows by 1,000 a minute). After each minute it prints one line: flows/s, p50 and p99 of the whole flow,
# the server's CPU per flow, the SQLite file and its WAL, and the server's resident memory. Flat from the first
# minutes on means the purge of expired requests and sessions keeps up and nothing grows with time but the
# registrations and the audit trail (a row of about 275 bytes per verified login, kept for
# observability.auditRetentionDays).
#
#   swift build -c release --product mauth && Benchmarks/long-run.sh [MINUTES] [SESSION_SECONDS] [MAUTH_BINARY]
#
# Starts its own server on loopback in a temporary directory and stops it at the end (or on Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/common.sh
MINUTES="${1:-60}"
SESSION_SECONDS="${2:-300}"
MAUTH="${3:-.build/release/mauth}"
[ -x "$MAUTH" ] || { echo "long run: $MAUTH is not built (swift build -c release --product mauth)"; exit 1; }
WORK="$(mktemp -d /tmp/mauth-long.XXXXXX)"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; } || true
    rm -rf "$WORK"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=mauth long run" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/tls.key" -out "$WORK/tls.pem" 2>/dev/null
make_relying_party_key "$WORK"
cat > "$WORK/server.json" <<JSON
{
  "facets": ["ios:bundle-id:ch.nevis.mauth.virtualdevice"],
  "tls": {"certificatePath": "$WORK/tls.pem", "privateKeyPath": "$WORK/tls.key"},
  "limits": {"requestsPerMinutePerAddress": 0},
  "tokens": {"sessionLifetimeSeconds": $SESSION_SECONDS},
  "authorization": {"jwt": {"publicKeyPaths": ["$WORK/rp.pub.pem"], "issuer": "https://rp.load.example", "audience": "mauth-server"}}
}
JSON
port=$(free_port)
"$MAUTH" server --config "$WORK/server.json" --port "$port" --database "$WORK/db.sqlite" --log-level warning >"$WORK/server.log" 2>&1 &
server_pid=$!
wait_ready "$port" "$WORK/tls.pem" || { echo "long run: the server did not become ready"; cat "$WORK/server.log"; exit 1; }

size() { stat -c %s "$1" 2>/dev/null || echo 0; }
printf "%6s %9s %8s %8s %12s %10s %10s %8s\n" minute flows/s p50_ms p99_ms server_ms/flow db_MB wal_MB rss_MiB
for minute in $(seq 1 "$MINUTES"); do
    "$MAUTH" load --url "https://127.0.0.1:$port" --ca-file "$WORK/tls.pem" --relying-party-key "$WORK/rp.pem" \
        --duration 58 --server-pid "$server_pid" --json --quiet >"$WORK/run.json" 2>"$WORK/run.err" \
        || { echo "long run: minute $minute failed"; cat "$WORK/run.err"; tail -20 "$WORK/server.log"; exit 1; }
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status")
    python3 - "$WORK/run.json" "$minute" "$(size "$WORK/db.sqlite")" "$(size "$WORK/db.sqlite-wal")" "$rss" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
minute, db, wal, rss = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
measured = report["measured"]
server = [p for p in measured["cpu"]["processes"] if p["role"] != "load generator"]
cpu = server[0]["millisecondsPerFlow"] if server else float("nan")
latency = measured["flowLatency"]
print(f"{minute:6d} {measured['flowsPerSecond']:9.0f} {latency['p50Milliseconds']:8.2f} {latency['p99Milliseconds']:8.2f} "
      f"{cpu:12.3f} {db / 1e6:10.1f} {wal / 1e6:10.1f} {rss / 1024:8.1f}", flush=True)
if measured["failedFlows"]:
    sys.exit(f"long run: {measured['failedFlows']} flows failed in minute {minute}")
PY
done
echo "long run: $MINUTES minute(s), no flow failed"
