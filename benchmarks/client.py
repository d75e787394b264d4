#!/usr/bin/env python3
"""Client cost per call: minimcp's ``Client`` against the official SDK's async ``Client``, same run.

    python benchmarks/client.py [-n 1500] [--repeats 3] [--threads 8]

The server is minimcp's benchmark server (``bench_server.py`` on its embedded HTTP server) in a
subprocess of its own; each client configuration runs in a fresh subprocess that connects, warms
up, then makes ``n`` ``call_tool("echo")`` calls and reports its own CPU time (``process_time``:
every thread of the client process) and wall time. The client's CPU per call is the figure that
holds on a loaded machine; calls/s is printed beside it. Rows:

    sequential   one caller, one call after another
    parallel     ``--threads`` callers sharing one client: minimcp's threads, the official
                 client's ``asyncio.gather`` of as many tasks

for each era (legacy: ``initialize`` and ``Mcp-Session-Id``; 2026-07-28: every call stands alone).
Configurations are interleaved per repeat; the table gives medians and the official / minimcp
ratios of the same repeats (above 1 means minimcp is cheaper or faster).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ERAS = {"legacy": "legacy", "2026": "2026-07-28"}
WARMUP = 50
READY_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    """The benchmark server on a free port, once it accepts connections."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "bench_server.py"), str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the benchmark server did not start")


# --- the measured clients (each runs in a subprocess: `client.py --worker ...`) ---------------


def run_minimcp(url: str, era: str, n: int, threads: int) -> dict[str, float]:
    from minimcp import Client

    with Client(url, mode=era) as client:
        for i in range(WARMUP):
            client.call_tool("echo", {"text": f"warm {i}"})
        per_thread = n // threads

        def loop(tag: int) -> None:
            for i in range(per_thread):
                client.call_tool("echo", {"text": f"hello {tag} {i}"})

        cpu0, wall0 = time.process_time(), time.perf_counter()
        if threads == 1:
            loop(0)
        else:
            workers = [threading.Thread(target=loop, args=(t,)) for t in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"calls": per_thread * threads, "cpu": cpu, "wall": wall}


def run_official(url: str, era: str, n: int, threads: int) -> dict[str, float]:
    import asyncio

    from mcp.client import Client

    async def main() -> dict[str, float]:
        async with Client(url, mode=era) as client:
            for i in range(WARMUP):
                await client.call_tool("echo", {"text": f"warm {i}"})
            per_task = n // threads

            async def loop(tag: int) -> None:
                for i in range(per_task):
                    await client.call_tool("echo", {"text": f"hello {tag} {i}"})

            cpu0, wall0 = time.process_time(), time.perf_counter()
            await asyncio.gather(*(loop(t) for t in range(threads)))
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        return {"calls": per_task * threads, "cpu": cpu, "wall": wall}

    return asyncio.run(main())


def worker(argv: list[str]) -> None:
    kind, url, era, n, threads = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    run = run_minimcp if kind == "minimcp" else run_official
    print(json.dumps(run(url, era, n, threads)))


def measure(kind: str, url: str, era: str, n: int, threads: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--worker", kind, url, era, str(n), str(threads)],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"{kind} {era} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1500, help="measured calls per run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=8, help="callers in the parallel rows")
    ap.add_argument("--json", action="store_true", help="print the medians as JSON too")
    args = ap.parse_args()
    proc, url = start_server()
    rows: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    try:
        for _ in range(args.repeats):
            for era_name, era in ERAS.items():
                for shape, threads in (("sequential", 1), ("parallel", args.threads)):
                    for kind in ("minimcp", "official"):
                        rows.setdefault((era_name, shape, kind), []).append(measure(kind, url, era, args.n, threads))
    finally:
        proc.terminate()
        proc.wait(10)
    report(rows, args.json)


def report(rows: dict[tuple[str, str, str], list[dict[str, float]]], as_json: bool) -> None:
    def us(run: dict[str, float]) -> float:
        return run["cpu"] / run["calls"] * 1e6

    def rate(run: dict[str, float]) -> float:
        return run["calls"] / run["wall"]

    print(f"{'era':<7}{'shape':<12}{'minimcp µs/call':>17}{'official µs/call':>18}{'cpu ratio':>11}"
          f"{'minimcp calls/s':>17}{'official calls/s':>18}{'rate ratio':>12}")
    summary: dict[str, Any] = {}
    for era_name in ERAS:
        for shape in ("sequential", "parallel"):
            mine, theirs = rows[(era_name, shape, "minimcp")], rows[(era_name, shape, "official")]
            cpu_ratio = statistics.median(us(t) / us(m) for m, t in zip(mine, theirs))
            rate_ratio = statistics.median(rate(m) / rate(t) for m, t in zip(mine, theirs))
            line = {"minimcp_us": statistics.median(map(us, mine)), "official_us": statistics.median(map(us, theirs)),
                    "cpu_ratio": cpu_ratio, "minimcp_rate": statistics.median(map(rate, mine)),
                    "official_rate": statistics.median(map(rate, theirs)), "rate_ratio": rate_ratio}
            summary[f"{era_name}/{shape}"] = line
            print(f"{era_name:<7}{shape:<12}{line['minimcp_us']:>17.0f}{line['official_us']:>18.0f}{cpu_ratio:>10.2f}x"
                  f"{line['minimcp_rate']:>17.0f}{line['official_rate']:>18.0f}{rate_ratio:>11.2f}x")
    if as_json:
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
