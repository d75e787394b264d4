#!/usr/bin/env python3
"""Footprint: import time and resident memory, minimcp against the official SDK, same run.

    python benchmarks/footprint.py [--repeats 7] [--sessions 1000]

- import time: a fresh interpreter importing ``minimcp``, ``minimcp.server`` and
  ``minimcp.client`` against ``mcp``, ``mcp.server`` and ``mcp.client``, less a bare
  interpreter's start (so the figure is the import alone): the best wall time of ``--repeats``
  runs each, and the median CPU time (user + system of the child), the figure that holds on a
  loaded machine, where the best wall time still waits for a core; runs are interleaved;
- RSS of a server process with 100 tools, both SDKs, once it has answered ``tools/list``;
- RSS of a minimcp server holding ``--sessions`` open legacy sessions (``initialize`` each), and
  what each session adds.

The figures are ratios of the same run; absolute times move with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
PAIRS = [("minimcp", "mcp"), ("minimcp.server", "mcp.server"), ("minimcp.client", "mcp.client")]
READY = re.compile(r"http://127\.0\.0\.1:(\d+)")

#: The same 100 tools on both SDKs; each program then serves them its own way on a port it picks.
TOOLS = """
from mcp_sdk.server import MCPServer
mcp = MCPServer("tools", log_level="INFO")
for i in range(100):
    def tool(text: str, n: int = 0) -> str:
        return text
    mcp.tool(name=f"tool_{i}", description=f"Tool number {i}")(tool)
"""
MINIMCP_SERVER = TOOLS.replace("mcp_sdk", "minimcp") + 'mcp.run(transport="streamable-http", port=0)\n'
OFFICIAL_SERVER = ("import uvicorn\n" + TOOLS.replace("mcp_sdk", "mcp")
                   + 'uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=0, log_level="info", access_log=False)\n')


def import_once(module: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter that imports ``module``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def import_seconds(modules: list[str], repeats: int) -> dict[str, tuple[float, float]]:
    """Per module, (best wall, median CPU) over ``repeats`` rounds, each round importing every module once."""
    runs: dict[str, list[tuple[float, float]]] = {module: [] for module in modules}
    for _ in range(repeats):
        for module in modules:
            runs[module].append(import_once(module))
    return {module: (min(w for w, _ in times), statistics.median(c for _, c in times)) for module, times in runs.items()}


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def post(url: str, message: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[str | None, bytes]:
    request = urllib.request.Request(url, data=json.dumps(message).encode(), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers.get("Mcp-Session-Id"), response.read()


class Served:
    """A server program that announces ``http://127.0.0.1:PORT`` once it listens; what it prints
    after that is read on a thread, so a chatty server never blocks on a full pipe."""

    def __init__(self, program: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, env=ENV)
        assert self.process.stdout is not None
        announced: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._drain, args=(self.process.stdout, announced), daemon=True).start()
        try:
            self.url = announced.get(timeout=60)
        except queue.Empty:
            self.process.kill()
            raise SystemExit("a measured server did not start") from None

    @staticmethod
    def _drain(stream: Any, announced: queue.Queue[str]) -> None:
        for line in stream:
            found = READY.search(line)
            if found and announced.empty():
                announced.put(f"http://127.0.0.1:{found.group(1)}/mcp")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def initialize(url: str) -> str | None:
    session, _ = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "footprint", "version": "1"}}})
    return session


def list_tools(url: str) -> None:
    session = initialize(url)
    headers = {"MCP-Protocol-Version": "2025-11-25", **({"Mcp-Session-Id": session} if session else {})}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--sessions", type=int, default=1000)
    args = ap.parse_args()

    times = import_seconds(["sys", *(module for pair in PAIRS for module in pair)], args.repeats)
    bare_wall, bare_cpu = times["sys"]
    print(f"{'import':<16}{'wall: minimcp ms':>18}{'official ms':>13}{'ratio':>8}"
          f"{'CPU: minimcp ms':>18}{'official ms':>13}{'ratio':>8}")
    for ours, theirs in PAIRS:
        (my_wall, my_cpu), (their_wall, their_cpu) = times[ours], times[theirs]
        my_wall, their_wall, my_cpu, their_cpu = my_wall - bare_wall, their_wall - bare_wall, my_cpu - bare_cpu, their_cpu - bare_cpu
        print(f"{ours:<16}{my_wall * 1000:>18.0f}{their_wall * 1000:>13.0f}{my_wall / their_wall:>8.2f}"
              f"{my_cpu * 1000:>18.0f}{their_cpu * 1000:>13.0f}{my_cpu / their_cpu:>8.2f}")

    print(f"\n{'server, 100 tools':<24}{'RSS MiB':>10}")
    sizes = {}
    for name, program in (("minimcp", MINIMCP_SERVER), ("official", OFFICIAL_SERVER)):
        served = Served(program)
        try:
            list_tools(served.url)
            sizes[name] = rss_kib(served.process.pid)
        finally:
            served.stop()
        print(f"{name:<24}{sizes[name] / 1024:>10.1f}")
    print(f"{'minimcp / official':<24}{sizes['minimcp'] / sizes['official']:>10.2f}")

    served = Served(MINIMCP_SERVER)
    try:
        list_tools(served.url)
        before = rss_kib(served.process.pid)
        for _ in range(args.sessions):
            initialize(served.url)
        after = rss_kib(served.process.pid)
    finally:
        served.stop()
    print(f"\nminimcp, {args.sessions} open legacy sessions: {after / 1024:.1f} MiB "
          f"(+{(after - before) / 1024:.1f} MiB, {(after - before) * 1024 / args.sessions / 1024:.1f} KiB each)")


if __name__ == "__main__":
    main()
