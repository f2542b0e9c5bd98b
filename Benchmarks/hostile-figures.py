#!/usr/bin/env python3
"""The hostile-client figures of Benchmarks/README.md, measured against a `mauth server` this script starts on
loopback (never any other address). Every loop is bounded in count and time and the server is stopped at the end.

    swift build -c release --product mauth
    python3 Benchmarks/hostile-figures.py .build/release/mauth [rss|disk|flood|qr ...]

Standard library only. Each measurement starts its own server on a fresh SQLite file in a temporary directory:
  rss    RSS and /metrics before and after 10,000 anonymous requests with distinct paths and ids (rate limit off)
  disk   bytes stored per anonymous dispatch at the limits, and after 10,000 of them, before and after expiry
  flood  a slow-body flood of 700 connections against a server whose descriptor limit is 512
  qr     /health/live latency while 4 and then 16 clients hammer QR dispatch with the largest anonymous code
  share  new clients served while one address holds bare connections past the cap (100), re-opening them as they close
  accept requests counted with a hostile Accept, and the server's CPU per request with a 67 KB one
  audit  audit rows and bytes one ordinary user's refused calls leave in a minute (a trusted proxy's user)
"""
import http.client
import json
import multiprocessing
import os
import resource
import shutil
import socket
import sqlite3
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """A `mauth server` on loopback with a development certificate, an SQLite file and `config`."""

    def __init__(self, mauth, config, descriptor_limit=None):
        self.dir = tempfile.mkdtemp(prefix="mauth-hostile-")
        self.port = free_port()
        self.database = os.path.join(self.dir, "mauth.sqlite")
        self.ca = os.path.join(self.dir, "ca.pem")
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump({"facets": ["ios:bundle-id:ch.nevis.mauth.virtualdevice"], **config}, f)

        def limit():
            if descriptor_limit:
                resource.setrlimit(resource.RLIMIT_NOFILE, (descriptor_limit, descriptor_limit))

        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.process = subprocess.Popen(
            [mauth, "server", "--port", str(self.port), "--database", self.database, "--write-certificate", self.ca,
             "--config", os.path.join(self.dir, "config.json"), "--log-level", "warning"],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=limit)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the server ended: {open(self.log.name).read()}")
            try:
                if self.request("GET", "/health/live")[0] == 200:
                    return
            except (OSError, ssl.SSLError):
                time.sleep(0.2)
        raise SystemExit("the server did not answer /health/live within 30 s")

    def context(self):
        context = ssl.create_default_context(cafile=self.ca)
        context.check_hostname = False
        return context

    def connection(self):
        return http.client.HTTPSConnection(HOST, self.port, context=self.context(), timeout=10)

    def request(self, method, path, body=None, headers=None, connection=None):
        own = connection is None
        connection = connection or self.connection()
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            if own:
                connection.close()

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def metrics(server):
    status, body = server.request("GET", "/metrics")
    series = [line for line in body.decode().splitlines() if line and not line.startswith("#")]
    return len(body), len(series)


def rss(mauth):
    server = Server(mauth, {"limits": {"requestsPerMinutePerAddress": 0}})
    try:
        connection = server.connection()

        def send(i):
            unique = uuid.uuid4().hex
            kind = i % 4
            if kind == 0:
                method, path, headers = "GET", f"/{unique}/{'x' * 200}", {}
            elif kind == 1:
                method, path, headers = "GET", f"/api/v1/users/{unique}", {}
            elif kind == 2:
                method, path, headers = "DELETE", f"/api/v1/users/{unique}", {"Authorization": f"Bearer {unique}"}
            else:
                method, path, headers = "GET", f"/nevisfido/token/dispatch/targets/{unique}", {"Authorization": "Bearer x.y.z"}
            return server.request(method, path, headers=headers, connection=connection)[0]

        for i in range(400):  # warm-up: every kind of request, so what follows measures growth, not first use
            send(i)
        metrics(server)  # the first scrape adds the series of /metrics itself
        before_rss, (before_bytes, before_series) = server.rss_kib(), metrics(server)
        answers = {}
        started = time.monotonic()
        for i in range(10_000):
            status = send(i)
            answers[status] = answers.get(status, 0) + 1
            if time.monotonic() - started > 300:
                break
        after_rss, (after_bytes, after_series) = server.rss_kib(), metrics(server)
        print(f"rss: {sum(answers.values())} requests with distinct paths and ids, answers {dict(sorted(answers.items()))}")
        print(f"rss: RSS {before_rss / 1024:.1f} MiB -> {after_rss / 1024:.1f} MiB; /metrics {before_bytes} -> {after_bytes} bytes, "
              f"{before_series} -> {after_series} series")
    finally:
        server.stop()


def database_bytes(server):
    return sum(os.path.getsize(server.database + suffix) for suffix in ("", "-wal") if os.path.exists(server.database + suffix))


def disk(mauth):
    server = Server(mauth, {"limits": {"requestsPerMinutePerAddress": 0}, "dispatch": {"tokenLifetimeSeconds": 10}})
    try:
        # At the anonymous limits: a 4,096-byte context and 4,096 bytes of dispatch information.
        # No username: a passwordless login by link, which an anonymous caller may start for nobody in particular.
        context = json.dumps({"pad": ""})
        context = json.dumps({"pad": "c" * (4096 - len(context))})
        information = json.dumps({"data": ""})
        information = json.dumps({"data": "d" * (4096 - len(information))})
        assert len(context) == 4096 and len(information) == 4096
        body = json.dumps({"dispatcher": "link", "dispatchInformation": information,
                           "getUafRequest": {"op": "Auth", "context": context}})
        connection = server.connection()
        status, answer = server.request("POST", "/nevisfido/token/dispatch/authentication", body=body,
                                        headers={"Content-Type": "application/json"}, connection=connection)
        assert status == 200 and b'"dispatched"' in answer, (status, answer)
        time.sleep(2)  # one checkpoint and purge pass
        before = database_bytes(server)
        refused = 0
        started = time.monotonic()
        count = 1
        while count < 10_000 and time.monotonic() - started < 300:
            status, answer = server.request("POST", "/nevisfido/token/dispatch/authentication", body=body,
                                            headers={"Content-Type": "application/json"}, connection=connection)
            refused += status != 200 or b'"dispatched"' not in answer
            count += 1

        def columns():
            with sqlite3.connect(f"file:{server.database}?mode=ro", uri=True) as db:
                token = db.execute("""SELECT avg(coalesce(length(get_uaf_request), 0) + coalesce(length(dispatch_information), 0)
                                              + coalesce(length(payload), 0) + length(token_hash) + length(session_id)),
                                             count(*) FROM dispatch_tokens""").fetchone()
                status_bytes = db.execute("SELECT avg(length(token_information)) FROM status_records").fetchone()[0]
                return token, status_bytes

        (row_bytes, rows), status_bytes = columns()
        after = database_bytes(server)
        print(f"disk: {count} dispatches ({refused} refused) in {time.monotonic() - started:.0f} s")
        print(f"disk: stored per token row {row_bytes:,.0f} bytes ({rows} rows); token information per status record "
              f"{status_bytes:,.0f} bytes; file and WAL grew {(after - before) / max(count - 1, 1):,.0f} bytes per dispatch "
              f"({before:,} -> {after:,} bytes)")
        time.sleep(14)  # the 10 s token lifetime, then the purge that empties expired tokens
        (row_bytes, rows), _ = columns()
        print(f"disk: after expiry, per token row {row_bytes:,.0f} bytes of payload and ids ({rows} rows kept an hour, "
              f"so a late redeem still answers expired); file and WAL {database_bytes(server):,} bytes")
    finally:
        server.stop()


def flood(mauth):
    connections, descriptor_limit = 700, 512
    server = Server(mauth, {"limits": {"requestsPerMinutePerAddress": 0}}, descriptor_limit=descriptor_limit)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    try:
        held, refused = [], 0
        head = (f"POST /nevisfido/status HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
                f"Content-Length: 100000\r\n\r\n").encode()
        context = server.context()
        started = time.monotonic()
        for _ in range(connections):
            raw = socket.create_connection((HOST, server.port), timeout=2)
            try:
                tls = context.wrap_socket(raw, server_hostname=HOST)
                tls.sendall(head)
                tls.setblocking(False)
                held.append(tls)
            except (OSError, ssl.SSLError):
                refused += 1
                raw.close()
        print(f"flood: {connections} slow-body connections opened in {time.monotonic() - started:.1f} s: "
              f"{len(held)} handshaken, {refused} refused at once")

        def still_open(tls):
            try:
                tls.send(b"x")  # one byte of the body per connection per round
                return tls.recv(1) != b""  # an answer or the end means the server let it go
            except (ssl.SSLWantReadError, BlockingIOError):
                return True
            except (OSError, ssl.SSLError):
                return False

        for second in range(26):
            open_now = [tls for tls in held if still_open(tls)]
            for tls in set(held) - set(open_now):
                tls.close()
            held = open_now
            if second in (3, 11, 17, 20, 25):
                try:
                    probe = f"{server.request('GET', '/health/live')[0]}"
                except (OSError, ssl.SSLError) as error:
                    probe = f"refused ({type(error).__name__})"
                print(f"flood: t={second:2d} s: {len(held)} slow connections still open; /health/live {probe}; "
                      f"process {'alive' if server.alive() else 'DEAD'}")
            time.sleep(1)
        for tls in held:
            tls.close()
        with open(server.log.name) as f:
            notes = [line.strip() for line in f if "connections at once" in line or "descriptor" in line]
        for line in notes[:2]:
            print(f"flood: server log: {line[-160:]}")
        print(f"flood: process {'alive' if server.alive() else 'DEAD'} at the end")
    finally:
        server.stop()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def share(mauth):
    server = Server(mauth, {"limits": {"maximumConnections": 100}})
    try:
        held = []

        def refill():
            # One address (127.0.0.2) keeps 150 connections that never send a byte, re-opened as they close.
            for sock in list(held):
                try:
                    if sock.recv(1) == b"":
                        held.remove(sock)
                        sock.close()
                except BlockingIOError:
                    pass
                except OSError:
                    held.remove(sock)
                    sock.close()
            while len(held) < 150:
                sock = socket.create_connection((HOST, server.port), timeout=2, source_address=("127.0.0.2", 0))
                sock.setblocking(False)
                held.append(sock)

        refill()
        time.sleep(0.5)
        served = tried = 0
        started = time.monotonic()
        while tried < 30 and time.monotonic() - started < 60:
            refill()
            tried += 1
            try:
                client = http.client.HTTPSConnection(HOST, server.port, context=server.context(), timeout=5,
                                                      source_address=("127.0.0.3", 0))
                client.request("GET", "/health/live")
                served += client.getresponse().status == 200
                client.close()
            except (OSError, ssl.SSLError, http.client.HTTPException):
                pass
            time.sleep(1)
        _, body = server.request("GET", "/metrics")
        counters = [line for line in body.decode().splitlines() if line.startswith("mauth_connections_")]
        print(f"share: one address holding 150 bare connections against a cap of 100: {served} of {tried} new clients "
              f"from another address served; {'; '.join(counters)}")
        for sock in held:
            sock.close()
    finally:
        server.stop()


def accept(mauth):
    body = json.dumps({"op": "Auth", "context": json.dumps({"username": "alice"})})
    headers = {"Content-Type": "application/fido+uaf", "Accept": "text/html"}
    server = Server(mauth, {})
    try:
        statuses = {}
        started = time.monotonic()
        for _ in range(1300):
            if time.monotonic() - started > 55:
                break
            status = server.request("POST", "/nevisfido/uaf/1.1/request/authentication", body=body, headers=headers)[0]
            statuses[status] = statuses.get(status, 0) + 1
        print(f"accept: {sum(statuses.values())} requests with Accept: text/html from one address within "
              f"{time.monotonic() - started:.0f} s (limit 1,200 a minute): {dict(sorted(statuses.items()))}")
    finally:
        server.stop()
    server = Server(mauth, {"limits": {"requestsPerMinutePerAddress": 0}})
    try:
        hostile = {**headers, "Accept": ", ".join(["text/html;q=0.9"] * 4200)[:67_000]}
        connection = server.connection()
        for _ in range(20):
            server.request("GET", "/health/live", connection=connection)
        before = cpu_seconds(server.process.pid)
        count, statuses = 300, {}
        for _ in range(count):
            status = server.request("POST", "/nevisfido/uaf/1.1/request/authentication", body=body, headers=hostile)[0]
            statuses[status] = statuses.get(status, 0) + 1
        used = cpu_seconds(server.process.pid) - before
        print(f"accept: {count} requests with a {len(hostile['Accept']):,}-byte Accept header, each on a new TLS connection: "
              f"{used * 1000 / count:.2f} ms of server CPU each (handshake included); answers {dict(sorted(statuses.items()))}")
    finally:
        server.stop()


def audit(mauth):
    server = Server(mauth, {"authorization": {"trustedProxy": {"header": "X-Authenticated-User", "addresses": ["127.0.0.1"]}}})
    try:
        # Start just after a minute begins, so the calls fall into one audit minute.
        time.sleep(61 - time.time() % 60)
        body = json.dumps({"op": "Auth", "context": json.dumps({"username": "alice", "policy": "no-such-policy"})})
        headers = {"Content-Type": "application/fido+uaf", "X-Authenticated-User": "alice"}
        connection = server.connection()
        statuses = {}
        started = time.monotonic()
        for _ in range(1200):
            if time.monotonic() - started > 50:
                break
            status, answer = server.request("POST", "/nevisfido/uaf/1.1/request/authentication", body=body, headers=headers,
                                            connection=connection)
            code = json.loads(answer).get("statusCode") if status == 200 else status
            statuses[code] = statuses.get(code, 0) + 1
        time.sleep(62 - time.time() % 60)  # the minute ends; its summary rows are written within a second
        with sqlite3.connect(f"file:{server.database}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT count(*), sum(length(coalesce(detail, '')) + length(coalesce(principal, '')) + "
                              "length(coalesce(operation, '')) + length(coalesce(client_address, ''))) FROM audit_events "
                              "WHERE principal LIKE 'trusted-proxy:alice%' OR operation = 'audit budget'").fetchone()
        print(f"audit: {sum(statuses.values())} refused step-ups by one user in a minute (answers {statuses}): "
              f"{rows[0]} audit rows stored, {rows[1] or 0:,} bytes of their text columns; at 274 bytes a row on disk "
              f"{rows[0] * 274 / 1000:.1f} KB a minute, {rows[0] * 274 * 1440 / 1e6:.0f} MB a day")
    finally:
        server.stop()


def qr_body(data_bytes):
    return json.dumps({"dispatcher": "png-qr-code", "dispatchInformation": json.dumps({"data": "q" * data_bytes}),
                       "getUafRequest": {"op": "Auth"}})


def largest_qr_data(server):
    """The most `data` bytes whose code is still drawn: the code holds at most 2,331 bytes (version 40, level M),
    and the payload around the data (redeem URL, token, base64url) takes its share."""
    low, high = 1, 2331
    while low < high:
        middle = (low + high + 1) // 2
        status, _ = server.request("POST", "/nevisfido/token/dispatch/authentication", body=qr_body(middle),
                                   headers={"Content-Type": "application/json"})
        low, high = (middle, high) if status == 200 else (low, middle - 1)
    return low


def qr_client(port, ca, data_bytes, stop_at, counts):
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    connection = http.client.HTTPSConnection(HOST, port, context=context, timeout=30)
    body = qr_body(data_bytes)
    done = 0
    while time.monotonic() < stop_at:
        connection.request("POST", "/nevisfido/token/dispatch/authentication", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        done += response.status == 200
    counts.put(done)


def probe(server, seconds):
    connection = server.connection()
    latencies = []
    stop_at = time.monotonic() + seconds
    while time.monotonic() < stop_at:
        started = time.perf_counter()
        server.request("GET", "/health/live", connection=connection)
        latencies.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


def qr(mauth):
    server = Server(mauth, {"limits": {"requestsPerMinutePerAddress": 0}})
    try:
        data_bytes = largest_qr_data(server)
        p50, p99 = probe(server, 10)
        print(f"qr: the largest anonymous code holds {data_bytes} bytes of data")
        print(f"qr: idle: /health/live p50 {p50:.1f} ms, p99 {p99:.1f} ms")
        for clients in (4, 16):
            counts = multiprocessing.Queue()
            stop_at = time.monotonic() + 20
            workers = [multiprocessing.Process(target=qr_client, args=(server.port, server.ca, data_bytes, stop_at, counts))
                       for _ in range(clients)]
            for worker in workers:
                worker.start()
            time.sleep(1)
            p50, p99 = probe(server, 18)
            for worker in workers:
                worker.join(timeout=60)
            drawn = sum(counts.get(timeout=5) for _ in workers)
            print(f"qr: {clients} clients: /health/live p50 {p50:.1f} ms, p99 {p99:.1f} ms; {drawn} codes drawn in 20 s "
                  f"({drawn / 20:.0f}/s)")
    finally:
        server.stop()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    chosen = sys.argv[2:] or ["rss", "disk", "flood", "qr", "share", "accept", "audit"]
    for name in chosen:
        {"rss": rss, "disk": disk, "flood": flood, "qr": qr, "share": share, "accept": accept, "audit": audit}[name](sys.argv[1])
