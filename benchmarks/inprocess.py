#!/usr/bin/env python3
"""minimcp's own layer alone: the benchmark flows through ``MCPWSGIApp``, with no HTTP server.

    python benchmarks/inprocess.py [--flow echo-2026|echo-legacy|elicit-2026|elicit-legacy|all] [-n 5000]
                                   [--profile] [--top 40]

``cpu.py`` measures minimcp served (its HTTP server's cost included, and the hand-offs between its
threads under load); this calls the WSGI app of ``bench_server.py`` directly with the environs a
WSGI server would build for ``load.py``'s requests, so the figure is the Python work of minimcp's
own layer, with no socket and no other process. CPU is ``time.process_time`` (every thread of this
process: a legacy call runs on a pool worker), per call (per round trip for the elicit flows, both
POSTs). It moves little with the machine's load, so it suits a before/after of one change, run
back to back; the served figures of ``cpu.py`` are the ones the issue's targets name.

``--profile`` runs the flow under cProfile and prints the functions by own time and by cumulative
time (the calling thread only: a legacy tool's own run on its worker is not in it).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench_server import app
from load import ACCEPT, ACCEPTED, CAPABILITIES, CLIENT_INFO, FLOWS, LEGACY, MODERN

Environ = dict[str, Any]


def environ(body: bytes, headers: dict[str, str], method: str = "POST") -> Environ:
    """The environ a WSGI server builds for one request of ``load.py`` to ``/mcp``."""
    env: Environ = {
        "REQUEST_METHOD": method, "PATH_INFO": "/mcp", "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000", "HTTP_ACCEPT": ACCEPT, "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http",
        "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.errors": sys.stderr,
    }
    for name, value in headers.items():
        env["HTTP_" + name.upper().replace("-", "_")] = value
    return env


class Answer:
    """One response: its status and headers, and its body, read lazily (an SSE stream stays open
    until it is read to its end)."""

    def __init__(self, env: Environ) -> None:
        self.status = ""
        self.headers: dict[str, str] = {}
        self.body = app(env, self._start)

    def _start(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        self.status, self.headers = status, {k.lower(): v for k, v in headers}

    def messages(self) -> Iterator[dict[str, Any]]:
        """The JSON-RPC messages of the body: one JSON document, or an SSE stream's data events."""
        try:
            if self.headers.get("content-type", "").startswith("text/event-stream"):
                buffer = b""
                for chunk in self.body:
                    buffer += chunk
                    while b"\n\n" in buffer:
                        event, buffer = buffer.split(b"\n\n", 1)
                        data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
                        if data:
                            yield json.loads(data)
            else:
                data = b"".join(self.body)
                if data:
                    yield json.loads(data)
        finally:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()


class Caller:
    """One client of the app, in one era, shaped as ``load.py``'s."""

    def __init__(self, era: str) -> None:
        self.era = era
        self.session_id: str | None = None
        self.next_id = 0

    def headers(self, method: str | None, name: str | None) -> dict[str, str]:
        if self.era == MODERN:
            return {"MCP-Protocol-Version": MODERN, **({"Mcp-Method": method} if method else {}),
                    **({"Mcp-Name": name} if name else {})}
        return {"MCP-Protocol-Version": LEGACY, **({"Mcp-Session-Id": self.session_id} if self.session_id else {})}

    def post(self, message: dict[str, Any], method: str | None = None, name: str | None = None) -> Answer:
        body = json.dumps(message, separators=(",", ":")).encode()
        answer = Answer(environ(body, self.headers(method, name)))
        if not answer.status.startswith(("200", "202")):
            raise SystemExit(f"{message.get('method', 'answer')}: {answer.status} {b''.join(answer.body)[:200]!r}")
        self.session_id = answer.headers.get("mcp-session-id", self.session_id)
        return answer

    def call(self, method: str, params: dict[str, Any], name: str | None = None) -> Answer:
        self.next_id += 1
        if self.era == MODERN:
            params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                          "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                                          "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}}
        return self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}, method, name)

    def handshake(self) -> None:
        if self.era == LEGACY:
            list(self.call("initialize", {"protocolVersion": LEGACY, "capabilities": CAPABILITIES,
                                          "clientInfo": CLIENT_INFO}).messages())
            list(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).messages())

    def result(self, answer: Answer, on_request: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        final: dict[str, Any] = {}
        for message in answer.messages():
            if "method" in message and "id" in message and on_request is not None:
                on_request(message)
            elif "id" in message:
                final = message.get("result") or {}
        return final

    def echo(self, i: int) -> None:
        text = f"echo {i}"
        result = self.result(self.call("tools/call", {"name": "echo", "arguments": {"text": text}}, name="echo"))
        if result["content"][0]["text"] != text:
            raise SystemExit(f"echo: {result}")

    def elicit(self, i: int) -> None:
        call = {"name": "confirm", "arguments": {"n": i}}
        if self.era == MODERN:
            first = self.result(self.call("tools/call", call, name="confirm"))
            retry = {**call, "inputResponses": {key: ACCEPTED for key in first["inputRequests"]},
                     "requestState": first["requestState"]}
            result = self.result(self.call("tools/call", retry, name="confirm"))
        else:
            def answer(request: dict[str, Any]) -> None:
                list(self.post({"jsonrpc": "2.0", "id": request["id"], "result": ACCEPTED}).messages())
            result = self.result(self.call("tools/call", call, name="confirm"), on_request=answer)
        if result["content"][0]["text"] != f"confirmed {i}":
            raise SystemExit(f"confirm: {result}")




def measure(flow: str, n: int, profile: bool, top: int) -> None:
    era, mode = FLOWS[flow]
    caller = Caller(era)
    caller.handshake()
    step = getattr(caller, mode)
    for i in range(min(200, n)):  # warm-up: caches, lazy imports, the pool's first threads
        step(i)
    profiler = cProfile.Profile() if profile else None
    cpu, wall = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    for i in range(n):
        step(i)
    if profiler is not None:
        profiler.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"{flow:14s} {cpu / n * 1e6:7.1f} us CPU per call   {wall / n * 1e6:7.1f} us wall   (n={n})")
    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flow", choices=[*FLOWS, "all"], default="all")
    ap.add_argument("-n", type=int, default=5000, help="calls (round trips) measured per flow")
    ap.add_argument("--profile", action="store_true", help="cProfile the measured calls")
    ap.add_argument("--top", type=int, default=40, help="rows of each profile table")
    args = ap.parse_args()
    for flow in FLOWS if args.flow == "all" else [args.flow]:
        measure(flow, args.n, args.profile, args.top)
    app.close()


if __name__ == "__main__":
    main()
