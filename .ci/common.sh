# Shell helpers the CI scripts share (sourced by .ci/run, .ci/fault-tests and .ci/api-contract).

# free_port: a free TCP port on loopback.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# make_relying_party_key DIR: an ES256 relying-party key, DIR/rp.pem (PKCS#8) and its public half DIR/rp.pub.pem,
# whose JWTs a server configured with authorization.jwt.publicKeyPaths accepts.
make_relying_party_key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1/rp.pem" 2>/dev/null
    openssl pkey -in "$1/rp.pem" -pubout -out "$1/rp.pub.pem"
}

# wait_ready PORT CA_FILE: waits up to 20 s until the server on PORT answers /health/ready with 200; false otherwise.
wait_ready() {
    for _ in $(seq 1 100); do
        curl -sf --cacert "$2" "https://127.0.0.1:$1/health/ready" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}
