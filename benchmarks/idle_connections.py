#!/usr/bin/env python3
"""Threads and memory of minimcp's HTTP server while many idle keep-alive connections are held,
and how fast an echo is answered meanwhile (issue 18: 10,000 connections, an echo under 100 ms).

    python benchmarks/idle_connections.py [--connections 10000] [--echoes 200]

The server is ``benchmarks/bench_server.py`` (``mcp.run(transport="streamable-http")``) in a
subprocess on a loopback port, with ``max_connections`` above the count. Each held connection
makes one request (a 404) and then stays idle, kept alive, as an MCP client's connection between
calls; they come from loopback source addresses 127.0.0.2, 127.0.0.3, ... at most 250 each, within
the default per-address cap of 256. This process and the server raise their open-file limit
(``ulimit -n``) to the hard limit, which must allow the count. Everything is bounded: connections
open in batches with a timeout, and the whole run ends within ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PER_ADDRESS = 250
IDLE_REQUEST = b"GET /idle HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
ECHO_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "echo", "arguments": {"text": "hi"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
ECHO_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


def raise_file_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        sys.exit(f"the open-file hard limit is {hard}; {needed} are needed (raise ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def status(pid: int) -> tuple[int, float]:
    """(threads, RSS MiB) of the server process."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024


def echo(port: int, connection: http.client.HTTPConnection | None = None) -> float:
    """Milliseconds for one 2026-07-28 echo tools/call (on ``connection``, else on a new one)."""
    started = time.perf_counter()
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/mcp", ECHO_BODY, ECHO_HEADERS)
    reply = conn.getresponse()
    body = reply.read()
    if reply.status != 200 or b'"hi"' not in body:
        raise RuntimeError(f"echo failed: {reply.status} {body[:200]!r}")
    if connection is None:
        conn.close()
    return (time.perf_counter() - started) * 1000


def hold(port: int, count: int, first_address: int, held: list[socket.socket], refused: list[int]) -> None:
    for i in range(count):
        source = f"127.0.0.{first_address + i // PER_ADDRESS}"
        sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        sock.sendall(IDLE_REQUEST)
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        if not reply.startswith(b"HTTP/1.1 404"):
            refused.append(int(reply[9:12] or b"0"))
            sock.close()
            continue
        held.append(sock)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=10_000)
    ap.add_argument("--echoes", type=int, default=200, help="echo calls timed while the connections are held")
    ap.add_argument("--openers", type=int, default=8, help="threads opening the idle connections")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    if args.connections > PER_ADDRESS * 250:
        sys.exit(f"at most {PER_ADDRESS * 250} connections (loopback source addresses 127.0.0.2-251)")
    raise_file_limit(args.connections + 1000)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(HERE.parent), os.environ.get("PYTHONPATH")) if p)}
    server = subprocess.Popen([sys.executable, str(HERE / "bench_server.py"), str(port),
                               "--max-connections", str(args.connections + 1000)], env=env)
    deadline = time.monotonic() + args.timeout
    held: list[socket.socket] = []
    try:
        while True:
            try:
                echo(port)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit("the server did not start")
                time.sleep(0.1)
        warm = [echo(port) for _ in range(50)]
        threads0, rss0 = status(server.pid)
        print(f"server pid {server.pid} on port {port}; warm: {threads0} threads, RSS {rss0:.1f} MiB, "
              f"echo p50 {statistics.median(warm):.2f} ms")

        refused: list[int] = []
        started = time.monotonic()
        per_opener = -(-args.connections // args.openers)
        per_opener = -(-per_opener // PER_ADDRESS) * PER_ADDRESS  # whole addresses per opener
        openers = []
        first = 2
        for k in range(args.openers):
            count = min(per_opener, args.connections - k * per_opener)
            if count <= 0:
                break
            openers.append(threading.Thread(target=hold, args=(port, count, first, held, refused), daemon=True))
            first += -(-count // PER_ADDRESS)
        for t in openers:
            t.start()
        for t in openers:
            t.join(max(0.0, deadline - time.monotonic()))
        opened_s = time.monotonic() - started
        time.sleep(1.0)
        threads1, rss1 = status(server.pid)
        print(f"{len(held)} idle connections held (opened in {opened_s:.1f} s, {len(refused)} refused"
              f"{' ' + str(sorted(set(refused))) if refused else ''}): {threads1} threads, RSS {rss1:.1f} MiB "
              f"(+{rss1 - rss0:.1f} MiB, {1024 * (rss1 - rss0) / max(1, len(held)):.1f} KiB per connection)")

        fresh = [echo(port) for _ in range(args.echoes)]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        kept = [echo(port, conn) for _ in range(args.echoes)]
        conn.close()
        for label, values in (("echo on a new connection each", fresh), ("echo on one kept-alive connection", kept)):
            print(f"while held, {label}: p50 {statistics.median(values):.2f} ms, p99 {percentile(values, 0.99):.2f} ms, "
                  f"max {max(values):.2f} ms (n={len(values)})")
        threads2, rss2 = status(server.pid)
        print(f"after the echoes: {threads2} threads, RSS {rss2:.1f} MiB")
    finally:
        for sock in held:
            sock.close()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


if __name__ == "__main__":
    main()
