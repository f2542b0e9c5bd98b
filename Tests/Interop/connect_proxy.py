#!/usr/bin/env python3
"""A CONNECT proxy on loopback for the outbound proxy tests (Python's asyncio, not our code).

Usage:
  connect_proxy.py LOG [user:password]  -> writes "PORT <n>" to the file LOG, then one line per tunnel asked for:
                                           "CONNECT <host:port>", or "REFUSED <host:port>" when the
                                           Proxy-Authorization is not Basic user:password (answered 407)
It tunnels bytes both ways and never reads them: TLS stays end to end. It ends when its standard input closes.
"""
import asyncio
import base64
import sys


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


LOG = None


def log(line):
    with open(LOG, "a") as file:
        file.write(line + "\n")


async def handle(reader, writer, credentials):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if method != "CONNECT":
        writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
        return
    if credentials:
        expected = "Basic " + base64.b64encode(credentials.encode()).decode()
        if headers.get("proxy-authorization") != expected:
            log("REFUSED " + target)
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
    host, port = target.rsplit(":", 1)
    upstream_reader, upstream_writer = await asyncio.open_connection(host.strip("[]"), int(port))
    log("CONNECT " + target)
    writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
    await writer.drain()
    await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def main():
    global LOG
    LOG = sys.argv[1]
    credentials = sys.argv[2] if len(sys.argv) > 2 else ""
    server = await asyncio.start_server(lambda r, w: handle(r, w, credentials), "127.0.0.1", 0)
    log("PORT %d" % server.sockets[0].getsockname()[1])
    loop = asyncio.get_running_loop()
    # The test holds our standard input: when it goes, so do we (no proxy outlives its test).
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
