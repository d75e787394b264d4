#!/usr/bin/env python3
"""What a proxy adds to a call: server CPU and latency of a proxied echo against a direct one.

    python benchmarks/proxy.py [-n 1000] [--repeats 3]

Two processes: the benchmark server (``bench_server.py``, minimcp's own HTTP server) and a proxy
of it (``create_proxy(URL).run("streamable-http")``), each on a port of its own. One client in
this process calls ``echo`` ``n`` times straight at the server, then ``n`` times through the
proxy, per era, interleaved per repeat. The table shows medians over the repeats: wall-clock
latency per call (sequential calls, so latency and not throughput), the server's CPU per direct
call, and the proxy process's CPU per proxied call (utime+stime from ``/proc``, as ``cpu.py``
reads it): what the proxy adds, on top of the upstream's own cost, which it pays again.
"""

from __future__ import annotations

import argparse
import sys
import time

from cpu import cpu_seconds
from run import HERE, PY, Server, loadavg, log, med

from minimcp import Client

PROXY = ("import sys; from minimcp import create_proxy; "
         "create_proxy(sys.argv[1]).run('streamable-http', host='127.0.0.1', port=int(sys.argv[2]))")


def calls(url: str, mode: str, n: int, server: Server) -> tuple[float, float]:
    """Seconds per call (wall) and server CPU seconds per call, over ``n`` sequential echoes."""
    with Client(url, mode=mode) as client:
        for _ in range(20):  # warm: connections open, listings cached, code paths loaded
            client.call_tool("echo", {"text": "warm"})
        cpu = cpu_seconds(server.pid)
        started = time.perf_counter()
        for i in range(n):
            client.call_tool("echo", {"text": f"call {i}"})
        wall = time.perf_counter() - started
        return wall / n, (cpu_seconds(server.pid) - cpu) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1000, help="calls per measured run")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    upstream = Server("upstream", [PY, str(HERE / "bench_server.py"), "{PORT}"]).start()
    upstream.wait_ready()
    proxy = Server("proxy", [PY, "-c", PROXY, upstream.url, "{PORT}"]).start()
    try:
        proxy.wait_ready()
        log(f"load average {loadavg()}; {args.n} sequential echo calls per run, {args.repeats} repeats")
        rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.repeats):
            for mode in ("legacy", "auto"):
                rows.setdefault((mode, "direct"), []).append(calls(upstream.url, mode, args.n, upstream))
                rows.setdefault((mode, "proxied"), []).append(calls(proxy.url, mode, args.n, proxy))
        print(f"{'era':<8} {'direct µs':>10} {'proxied µs':>11} {'added µs':>9} "
              f"{'server CPU µs/call':>19} {'proxy CPU µs/call':>18}")
        for mode in ("legacy", "auto"):
            direct, proxied = rows[(mode, "direct")], rows[(mode, "proxied")]
            d_wall, p_wall = med([w for w, _ in direct]) * 1e6, med([w for w, _ in proxied]) * 1e6
            d_cpu, p_cpu = med([c for _, c in direct]) * 1e6, med([c for _, c in proxied]) * 1e6
            print(f"{mode:<8} {d_wall:>10.0f} {p_wall:>11.0f} {p_wall - d_wall:>9.0f} {d_cpu:>19.0f} {p_cpu:>18.0f}")
    finally:
        proxy.stop()
        upstream.stop()


if __name__ == "__main__":
    sys.exit(main())
