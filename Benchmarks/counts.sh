#!/usr/bin/env bash
# What a `mauth server` does per flow, counted instead of timed: the same in every run of a build, so it tells a small
# change apart where CPU time (which drifts 10–25 % within the hour here) cannot, and where valgrind cannot run the
# binary (3.19 cannot read its DWARF 5, and stops with SIGSEGV on a copy without it).
#
#   sudo Benchmarks/counts.sh MAUTH [MAUTH…]
#
# Per build and flow (the baseline, two GET /health/live; the UAF login; the passkey sign-in), per flow:
#   jobs        Swift concurrency jobs run (`swift_job_run`): each is a task resumed, or a hop between executors
#   mallocs     libc `malloc` calls
#   statements  SQLite statements run (`sqlite3_reset`, once per run of a kept statement, BEGIN and COMMIT included)
# counted with `perf stat` on uprobes (root). Each count is the difference between a run of 2,100 flows and one of
# 100 flows, divided by 2,000, so the start, the registrations and the connections cancel out.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/common.sh
[ $# -ge 1 ] || { echo "usage: $0 MAUTH [MAUTH…]"; exit 2; }
FLOWS="${FLOWS:-baseline authentication passkey}"
WORK="$(mktemp -d /tmp/mauth-counts.XXXXXX)"
cleanup() {
    perf probe -q -d 'mauthcounts:*' >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
make_measuring_server_files "$WORK" counts
library() { ldd "$1" | awk -v name="$2" '$1 ~ name { print $3 }'; }
perf probe -q -d 'mauthcounts:*' >/dev/null 2>&1 || true
perf probe -q -x "$(library "$1" libswift_Concurrency)" --add 'mauthcounts:jobs=swift_job_run'
perf probe -q -x "$(library "$1" '^libc\\.so')" --add 'mauthcounts:mallocs=malloc'

# count BINARY EVENTS FLOW N: the events' counts over one server's life with N flows of FLOW, one per line. It runs in
# a command substitution, out of reach of the trap: it stops its own server and `perf stat` on every path, and says
# why it failed on standard error.
count() {
    start_measuring_server counts "$1" "$WORK" "$WORK/$4.sqlite"
    perf stat -x, -e "$2" -p "$MEASURED_PID" -o "$WORK/stat.txt" &
    local stat=$! failed=""
    sleep 0.5
    "$1" load --url "https://127.0.0.1:$MEASURED_PORT" --ca-file "$WORK/tls.pem" --relying-party-key "$WORK/rp.pem" \
        --flow "$3" --users 100 --connections 8 --flows "$4" --quiet >"$WORK/load.txt" 2>&1 || failed=yes
    sleep 0.5
    kill -INT "$stat"; wait "$stat" || true
    kill "$MEASURED_PID"; wait "$MEASURED_PID" 2>/dev/null || true
    rm -f "$WORK/$4.sqlite"*
    [ -z "$failed" ] || { echo "counts: $3 failed" >&2; cat "$WORK/load.txt" >&2; exit 1; }
    grep -v '^#' "$WORK/stat.txt" | grep -v '^$' | cut -d, -f1
}

printf "%-40s %-15s %8s %8s %11s\n" build flow jobs mallocs statements
index=0
for binary in "$@"; do
    index=$((index + 1))
    perf probe -q -x "$binary" --add "mauthcounts:statements$index=sqlite_nio_sqlite3_reset"
    events="mauthcounts:jobs,mauthcounts:mallocs,mauthcounts:statements$index"
    for flow in $FLOWS; do
        few=$(count "$binary" "$events" "$flow" 100 | tr '\n' ' ')
        many=$(count "$binary" "$events" "$flow" 2100 | tr '\n' ' ')
        python3 - "$binary" "$flow" "$few" "$many" <<'PY'
import sys
few, many = ([int(x) for x in s.split()] for s in sys.argv[3:5])
jobs, mallocs, statements = ((b - a) / 2000 for a, b in zip(few, many))
print(f"{sys.argv[1][-40:]:<40} {sys.argv[2]:<15} {jobs:8.1f} {mallocs:8.1f} {statements:11.2f}")
PY
    done
done
