#!/usr/bin/env bash
# Where a `mauth server`'s CPU goes for one flow, by component: a sampled profile (`perf record -g`, root) of one
# server under `mauth load`, each sample charged to the first frame from the leaf up that belongs to a component
# (P-256, TLS, SQLite, the JSON codec, NIO, Hummingbird, our layers…), in µs of server CPU per flow.
#
#   sudo Benchmarks/profile.sh MAUTH [FLOW] [SECONDS] [postgres://…]
#
# FLOW is baseline, authentication (default) or passkey; the server runs with MAUTH_EVENT_LOOPS as exported (one loop
# keeps the two cores' contention out of the picture). Prints the CPU per flow `mauth load` measured, the components,
# and the twenty costliest functions by their own samples. Frames of async functions resumed by the runtime, and of
# BoringSSL's assembly, have no callers in the samples: such a sample is charged to what it is, not to who asked.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/common.sh
BINARY="$1"; FLOW="${2:-authentication}"; SECONDS_MEASURED="${3:-8}"; DATABASE="${4:-}"
WORK="$(mktemp -d /tmp/mauth-profile.XXXXXX)"
SERVER=""
cleanup() {
    [ -n "$SERVER" ] && { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; } || true
    [ -n "${KEEP:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT
make_measuring_server_files "$WORK" profile
start_measuring_server profile "$BINARY" "$WORK" "${DATABASE:-$WORK/db.sqlite}"
SERVER=$MEASURED_PID
"$BINARY" load --url "https://127.0.0.1:$MEASURED_PORT" --ca-file "$WORK/tls.pem" --relying-party-key "$WORK/rp.pem" \
    --flow "$FLOW" --users 2000 --duration $((SECONDS_MEASURED + 6)) --server-pid "$SERVER" --json --quiet \
    >"$WORK/load.json" 2>"$WORK/load.err" &
load=$!
sleep 5
perf record -q -g -e cpu-clock -F 2000 -p "$SERVER" -o "$WORK/perf.data" -- sleep "$SECONDS_MEASURED" >/dev/null 2>&1
wait "$load" || { echo "profile: the load failed"; cat "$WORK/load.err"; exit 1; }
perf script -i "$WORK/perf.data" -F ip,sym,dso 2>/dev/null | swift demangle --simplified >"$WORK/stacks.txt"
python3 - "$WORK/load.json" "$WORK/stacks.txt" "$FLOW" <<'PY'
import collections, json, re, sys
measured = json.load(open(sys.argv[1]))["measured"]
cpu = sum(p["millisecondsPerFlow"] for p in measured["cpu"]["processes"] if p["role"] != "load generator")
print(f"{sys.argv[3]}: {cpu:.3f} ms of server CPU per flow, {measured['flowsPerSecond']:.0f} flows/s")
# First match from the leaf up wins; the order below only matters for a frame two patterns match.
components = [
    ("P-256 (ECDSA sign and verify)", r"nistz256|ecp_nistz|beeu_mod_inverse|ec_GFp|ec_point|ECDSA|ecdsa_|bn_mul|bn_sqr|BN_"),
    ("SHA-2, HMAC", r"sha256_block|sha512_block|SHA256|SHA512|HMAC"),
    ("TLS (NIOSSL, AES-GCM)", r"NIOSSL|\bssl_|SSL_|aes_|gcm_|aesni|EVP_AEAD"),
    ("SQLite (statements, the group commit and its log writes)", r"sqlite|SQLiteEngine|SQLiteData|SQLiteResultRow|SQLiteKit"),
    ("PostgreSQL client", r"PostgresNIO|Postgres[A-Z]\w*|PSQL"),
    ("SQLKit: statement text", r"SQLSerializer|SQLQueryString|SQLKit|SQLRaw|SQLBind"),
    ("JSON codec", r"WireJSON|JSONSink|JSONParser|JSONDocument|WireKeyed|WireUnkeyed|WireSingle"),
    ("UAF, WebAuthn, CBOR parsing and rules", r"\bUAF\.|TLVDecoder|AuthenticationVerifier|RegistrationVerifier|UAFMessageCodec|Base64URL|WebAuthn|CBOR"),
    ("JWT", r"JWTKit|JWTSigner|JWTSerializer|JWTKeyCollection|TokenIssuer"),
    ("services and stores", r"Service\b|Service\.|Store\.|Store\b|UAFExchange|SignIn|ServiceEnvironment|PolicyChoice|OrderedToken|RandomToken|AuditTrail|ServerMetrics|StoreDatabase|Ceremony"),
    ("our HTTP layer", r"Middleware|Controller|RequestDeadline|RouteRules|ServerRequestContext|Wire\.|ServerLogHandler|RequestObservation"),
    ("Hummingbird", r"Hummingbird|Router|HTTPChannelHandler|Responder|ApplicationProtocol|RequestBody|ResponseWriter"),
    ("NIO HTTP/1 codec", r"HTTPDecoder|HTTPEncoder|llhttp|HTTP1ToHTTPServerCodec|HTTPServerPipelineHandler|BetterHTTPParser|NIOHTTP"),
    ("NIO async bridges", r"NIOAsync|AsyncSequenceProducer|AsyncChannel"),
    ("NIO event loop and channels", r"SelectableEventLoop|BaseSocketChannel|BaseStreamSocketChannel|ChannelPipeline|ChannelHandlerContext|Socket\.|PendingWrites|ByteBuffer|NIOPosix|NIOCore"),
    ("Swift concurrency runtime (jobs, hops)", r"swift_task_|swift_job|swift_continuation|AsyncTask|TaskLocal|withTaskCancellation|runJobInEstablished|StackAllocator|StatusRecord\b|addStatusRecord|removeStatusRecord"),
]
components = [(name, re.compile(pattern)) for name, pattern in components]
charged, own, total, commits, stack = collections.Counter(), collections.Counter(), 0, 0, []
def settle():
    global total, commits
    if not stack:
        return
    total += 1
    commits += any("SQLiteEngine.commit" in frame for frame in stack)
    own[re.sub(r"\s*\(\S*\)$", "", stack[0])] += 1
    for frame in stack:
        for name, pattern in components:
            if pattern.search(frame):
                charged[name] += 1
                return
    leaf = stack[0]
    charged["the kernel, outside those" if "kernel.kallsyms" in leaf else
            "libc and the Swift runtime (allocation, reference counting), outside those" if re.search(r"libc\.so|libswiftCore", leaf) else
            "other"] += 1
for line in open(sys.argv[2]):
    line = line.strip()
    if not line:
        settle(); stack.clear(); continue
    parts = line.split(None, 1)
    stack.append(parts[1] if len(parts) > 1 else parts[0])
settle()
print(f"\n{'share':>7} {'µs/flow':>8}  component")
for name, count in charged.most_common():
    print(f"{100 * count / total:6.1f}% {1000 * cpu * count / total:8.1f}  {name}")
print(f"{100 * commits / total:6.1f}% {1000 * cpu * commits / total:8.1f}  of which SQLite's group commit")
print(f"\n{'share':>7} {'µs/flow':>8}  function (own samples)")
for frame, count in own.most_common(20):
    print(f"{100 * count / total:6.1f}% {1000 * cpu * count / total:8.1f}  {frame[:110]}")
PY
