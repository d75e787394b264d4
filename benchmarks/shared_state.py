"""What a shared backend costs and what several workers give: gunicorn + redis-server on loopback.

    python benchmarks/shared_state.py [--seconds 5] [--clients 8] [--rounds 200]

Starts its own ``redis-server`` (a unix socket in a temporary directory, no TCP port) and, in turn,
``gunicorn -w 1`` of ``bench_server:app`` without a backend, ``gunicorn -w 1`` with
``BENCH_BACKEND=unix://...`` and ``gunicorn -w 4`` with it, each on a port it binds itself. Prints:

- the latency of a quiet 2026-07-28 ``echo`` (one client, keep-alive) and of a legacy elicitation
  round trip (``confirm``: the question on the call's SSE stream, the answer POSTed), without and
  with Redis, and their same-run ratios: what Redis adds (a quiet echo touches no shared state);
- the throughput of ``--clients`` concurrent 2026-07-28 echo clients and of legacy elicitations,
  every request on a new connection, 4 workers with Redis against 1 worker with Redis.

Figures depend on the machine (and on what else runs there); compare ratios of one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

import requests  # noqa: E402

from minimcp import Client  # noqa: E402
from minimcp.types import ElicitResult  # noqa: E402

_LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="minimcp-bench-redis-", dir="/tmp")
    socket_path = os.path.join(directory, "redis.sock")
    process = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", socket_path, "--save", "",
                                "--appendonly", "no", "--dir", directory], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(socket_path):
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("redis-server did not start")
            time.sleep(0.05)
        yield f"unix://{socket_path}"
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def gunicorn(workers: int, backend: str | None) -> Iterator[str]:
    """``gunicorn -w workers`` of the benchmark server on a port of its own; yields its endpoint URL."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (REPO, HERE, os.environ.get("PYTHONPATH")) if p)}
    env.pop("BENCH_BACKEND", None)
    if backend is not None:
        env["BENCH_BACKEND"] = backend
    command = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "64", "-w", str(workers),
               "-b", "127.0.0.1:0", "--chdir", HERE, "--no-control-socket", "bench_server:app"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    assert process.stderr is not None
    port = None
    for line in process.stderr:
        found = _LISTENING.search(line)
        if found:
            port = int(found[1])
            break
    if port is None:
        raise SystemExit("gunicorn did not start")
    drain = threading.Thread(target=process.stderr.read, daemon=True)  # never block it on a full pipe
    drain.start()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, workers)
        yield url
    finally:
        process.terminate()
        process.wait(20)


def wait_until_serving(url: str, workers: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with Client(url) as client:
                client.call_tool("echo", {"text": "up"})
            time.sleep(0.5 * workers)  # every worker has booted (gunicorn starts them one by one)
            return
        except Exception:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer")


def accept(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


def latency(url: str, mode: str, tool: str, rounds: int) -> float:
    """Median milliseconds of one call on one client (keep-alive), after a warm-up."""
    arguments = {"text": "hello"} if tool == "echo" else {"n": 1}
    with Client(url, mode=mode, elicitation_callback=accept) as client:
        for _ in range(20):
            client.call_tool(tool, arguments)
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            client.call_tool(tool, arguments)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


class _NewConnections(requests.Session):
    """Every request on a connection of its own, as behind a load balancer that does not keep them."""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        headers["Connection"] = "close"
        return super().request(method, url, *args, headers=headers, **kwargs)


def throughput(url: str, mode: str, tool: str, clients: int, seconds: float) -> tuple[float, int]:
    """Calls per second of ``clients`` concurrent clients for ``seconds``, and the failures."""
    from minimcp.client.streamable_http import streamable_http_client

    arguments = {"text": "hello"} if tool == "echo" else {"n": 1}
    done, failed = [0] * clients, [0] * clients
    stop = time.monotonic() + seconds

    def run(index: int) -> None:
        transport = streamable_http_client(url, http_client=_NewConnections())
        with Client(transport, mode=mode, elicitation_callback=accept, read_timeout_seconds=30) as client:
            while time.monotonic() < stop:
                try:
                    client.call_tool(tool, arguments)
                    done[index] += 1
                except Exception:
                    failed[index] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / (time.monotonic() - start), sum(failed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each throughput run")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients of each throughput run")
    ap.add_argument("--rounds", type=int, default=200, help="calls of each latency run")
    args = ap.parse_args()
    with redis_server() as redis_url:
        print("latency, one client, keep-alive (median ms)")
        figures: dict[str, dict[str, float]] = {}
        for label, backend in (("memory", None), ("redis", redis_url)):
            with gunicorn(1, backend) as url:
                figures[label] = {"echo": latency(url, "auto", "echo", args.rounds),
                                  "elicit": latency(url, "legacy", "confirm", args.rounds // 2)}
        for what, name in (("echo", "2026-07-28 quiet echo"), ("elicit", "legacy elicitation round trip")):
            memory, shared = figures["memory"][what], figures["redis"][what]
            print(f"  {name:32s} memory {memory:7.2f}  redis {shared:7.2f}  redis/memory {shared / memory:5.2f}"
                  f"  (+{shared - memory:.2f} ms)")
        print(f"throughput, {args.clients} clients, new connection per request (calls/s)")
        rates: dict[int, dict[str, tuple[float, int]]] = {}
        for workers in (1, 4):
            with gunicorn(workers, redis_url) as url:
                rates[workers] = {"echo": throughput(url, "auto", "echo", args.clients, args.seconds),
                                  "elicit": throughput(url, "legacy", "confirm", args.clients, args.seconds)}
        for what, name in (("echo", "2026-07-28 echo"), ("elicit", "legacy elicitation")):
            (one, one_failed), (four, four_failed) = rates[1][what], rates[4][what]
            print(f"  {name:32s} -w 1 {one:8.1f}  -w 4 {four:8.1f}  ratio {four / one:5.2f}"
                  f"  (failures {one_failed} / {four_failed})")
        print(f"  cores: {os.cpu_count()} (several workers pay off up to the cores the machine gives)")


if __name__ == "__main__":
    main()
