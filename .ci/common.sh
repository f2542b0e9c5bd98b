# Shell helpers the CI scripts and the benchmark scripts share (sourced by .ci/run, the suites beside it and Benchmarks/*.sh).

# free_port: a free TCP port on loopback.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# make_relying_party_key DIR: an ES256 relying-party key, DIR/rp.pem (PKCS#8) and its public half DIR/rp.pub.pem,
# whose JWTs a server configured with authorization.jwt.publicKeyPaths accepts.
make_relying_party_key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1/rp.pem" 2>/dev/null
    openssl pkey -in "$1/rp.pem" -pubout -out "$1/rp.pub.pem"
}

# make_measuring_server_files DIR NAME: what the measuring scripts in Benchmarks/ start their servers with: a
# loopback TLS certificate (DIR/tls.pem, DIR/tls.key), a relying-party key (make_relying_party_key) and DIR/server.json,
# which trusts the virtual devices and that key and has no per-address limit (all load comes from one address).
make_measuring_server_files() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=mauth $2" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$1/tls.key" -out "$1/tls.pem" 2>/dev/null
    make_relying_party_key "$1"
    cat > "$1/server.json" <<JSON
{
  "appID": "https://mauth.$2.example/nevisfido/uaf/1.1/facets",
  "facets": ["ios:bundle-id:ch.nevis.mauth.virtualdevice"],
  "tls": {"certificatePath": "$1/tls.pem", "privateKeyPath": "$1/tls.key"},
  "limits": {"requestsPerMinutePerAddress": 0, "maximumConnectionsPerAddress": 4096},
  "fido2": {"rpId": "localhost", "origins": ["https://localhost"]},
  "authorization": {"jwt": {"publicKeyPaths": ["$1/rp.pub.pem"], "issuer": "https://rp.load.example", "audience": "mauth-server"}}
}
JSON
}

# start_measuring_server WHO BINARY DIR DATABASE: starts BINARY's server with DIR's measuring files
# (make_measuring_server_files) on DATABASE and a free port, its log appended to DIR/server.log, and waits until it is
# ready; sets MEASURED_PORT and MEASURED_PID. When it does not become ready: stops it, prints WHO's message and the log
# to standard error, and exits.
start_measuring_server() {
    MEASURED_PORT=$(free_port)
    "$2" server --config "$3/server.json" --port "$MEASURED_PORT" --database "$4" --log-level warning \
        >>"$3/server.log" 2>&1 &
    MEASURED_PID=$!
    wait_ready "$MEASURED_PORT" "$3/tls.pem" && return 0
    kill "$MEASURED_PID" 2>/dev/null || true
    echo "$1: the server did not start" >&2
    cat "$3/server.log" >&2
    exit 1
}

# wait_ready PORT CA_FILE: waits up to 20 s until the server on PORT answers /health/ready with 200; false otherwise.
wait_ready() {
    for _ in $(seq 1 100); do
        curl -sf --cacert "$2" "https://127.0.0.1:$1/health/ready" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# mint_jwt KEY_PEM ISSUER AUDIENCE SUBJECT [SCOPE]: an ES256 JWT valid for an hour, signed with KEY_PEM (needs the
# cryptography package from PyPI): what a relying party's backend hands its app.
mint_jwt() {
    python3 - "$@" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
key_path, issuer, audience, subject = sys.argv[1:5]
key = serialization.load_pem_private_key(open(key_path, "rb").read(), password=None)
b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
now = int(time.time())
claims = {"iss": issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + 3600}
if len(sys.argv) > 5:
    claims["scope"] = sys.argv[5]
header = b64(json.dumps({"alg": "ES256", "typ": "JWT"}).encode())
body = b64(json.dumps(claims).encode())
r, s = decode_dss_signature(key.sign(f"{header}.{body}".encode(), ec.ECDSA(hashes.SHA256())))
print(f"{header}.{body}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}")
PY
}

# Stage times: `stage NAME` ends the running stage and starts NAME; `background NAME COMMAND...` runs a stage beside
# the others (its output kept), and `await_background NAME` waits for it, prints its output
# and fails when it failed; `stage_table` prints each stage's seconds and the run's (wall-clock) total. .ci/run calls
# stage_table when it exits, whatever happened, so a failed run shows where its time went.
CI_STAGE_NAMES=()
CI_STAGE_SECONDS=()
CI_STAGE_NAME=""
CI_STAGE_STARTED=0
declare -A CI_BACKGROUND_PID=() CI_BACKGROUND_LOG=()
stage() {
    local now=$SECONDS
    if [ -n "$CI_STAGE_NAME" ]; then
        CI_STAGE_NAMES+=("$CI_STAGE_NAME")
        CI_STAGE_SECONDS+=($((now - CI_STAGE_STARTED)))
        echo "=== stage '$CI_STAGE_NAME': $((now - CI_STAGE_STARTED)) s"
    fi
    CI_STAGE_NAME="${1:-}"
    CI_STAGE_STARTED=$now
    [ -z "$CI_STAGE_NAME" ] || echo "=== stage '$CI_STAGE_NAME' (at $now s)"
}
background() {
    local name="$1"; shift
    local log; log=$(mktemp)
    CI_BACKGROUND_LOG[$name]=$log
    echo "=== background stage '$name' started (at $SECONDS s)"
    # Each background stage records its own start and end, so the table shows what it took, not when it was awaited.
    ( started=$(date +%s); status=0; "$@" || status=$?
      echo "$(( $(date +%s) - started )) $status" >"$log.done" ) >"$log" 2>&1 &
    CI_BACKGROUND_PID[$name]=$!
}
await_background() {
    local name="$1" log="${CI_BACKGROUND_LOG[$1]}"
    wait "${CI_BACKGROUND_PID[$name]}" || true
    unset "CI_BACKGROUND_PID[$name]"
    cat "$log"
    local seconds=0 status=1
    [ -f "$log.done" ] && read -r seconds status <"$log.done"
    CI_STAGE_NAMES+=("$name (background)")
    CI_STAGE_SECONDS+=("$seconds")
    echo "=== background stage '$name': $seconds s, exit $status"
    [ "$status" = 0 ] || { echo "the background stage '$name' failed"; return 1; }
}
# stop_background: ends every background stage still running and what it started (a run that failed early).
stop_background() {
    local pid
    for pid in "${CI_BACKGROUND_PID[@]}"; do kill_tree "$pid"; done
}
kill_tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
stage_table() {
    stage ""
    local i
    echo "=== stage times (seconds; background stages ran beside the others)"
    for i in "${!CI_STAGE_NAMES[@]}"; do
        printf '  %-44s %6d\n' "${CI_STAGE_NAMES[$i]}" "${CI_STAGE_SECONDS[$i]}"
    done
    printf '  %-44s %6d\n' "the whole run (wall clock)" "$SECONDS"
}

# compiler_seconds: how long this machine takes to compile a fixed Swift workload (twelve Codable structs and generic
# functions over them, with -O), twice at once on the two cores, in seconds with two decimals. .ci/run scales its
# budget by it: a slower machine is given proportionally longer, so the budget catches a run that does more work, not
# a slow host. The workload is generated here, not committed as source, and must not change: its time on the machine
# the budget was set on is CI_CALIBRATION_REFERENCE_SECONDS. That figure is derived, from one tree run on two machines:
# the whole run took 1,560 s on the machine the 1,800 s budget was set on and 3,960 s on a slower one, where this
# workload took 10.7 s; 10.7 × 1,560 / 3,960 = 4.2.
CI_CALIBRATION_REFERENCE_SECONDS=4.2
compiler_seconds() {
    local dir; dir=$(mktemp -d)
    python3 - "$dir/workload.swift" <<'PY'
import sys
parts = []
for i in range(12):
    parts.append(f"""struct Record{i}: Codable, Hashable, Sendable {{
    var name: String
    var count: Int
    var values: [Double]
    var tags: [String: String]
    var nested: [Int: [String]]
    func summary() -> String {{ "\\(name) \\(count) \\(values.map {{ $0 * 2 }}.reduce(0, +)) \\(tags.keys.sorted().joined(separator: ","))" }}
}}
func transform{i}<T: Sequence>(_ items: T) -> [String] where T.Element == Record{i} {{
    items.filter {{ $0.count > {i} }}.sorted {{ $0.name < $1.name }}.map {{ $0.summary() }}.compactMap {{ $0.isEmpty ? nil : $0.uppercased() }}
}}
""")
parts.append('print(transform0([Record0(name: "a", count: 1, values: [], tags: [:], nested: [:])]))\n')
open(sys.argv[1], "w").write("".join(parts))
PY
    local started; started=$(date +%s%N)
    swiftc -O "$dir/workload.swift" -o "$dir/a" & local first=$!
    local status=0
    swiftc -O "$dir/workload.swift" -o "$dir/b" || status=1
    wait "$first" || status=1
    [ "$status" = 0 ] || { rm -rf "$dir"; echo "compiler_seconds: the calibration workload did not compile" >&2; return 1; }
    local elapsed=$(( $(date +%s%N) - started ))
    rm -rf "$dir"
    printf '%d.%02d\n' $((elapsed / 1000000000)) $(( (elapsed / 10000000) % 100 ))
}
