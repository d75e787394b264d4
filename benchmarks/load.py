#!/usr/bin/env python3
"""The project's MCP load generator for Streamable HTTP servers (standard library only).

    python benchmarks/load.py URL [--era 2026-07-28|2025-11-25] [--mode echo|elicit] [-n 2000] [-c 8]
                                  [--procs 1] [--warmup 5] [--timeout 30] [--json]

``c`` client threads, each on its own keep-alive ``http.client`` connection (spread over
``--procs`` processes when one process's GIL would cap the load), share ``n`` calls; latency is
measured per call, from the first byte sent to the final result parsed and checked.

The eras:

- 2025-11-25 (legacy): ``initialize`` and ``notifications/initialized`` first; every later request
  carries the ``Mcp-Session-Id`` the server issued (if any) and ``MCP-Protocol-Version``.
- 2026-07-28: no handshake; every request carries ``MCP-Protocol-Version``, ``Mcp-Method`` and
  ``Mcp-Name`` headers and the protocol version, client info and capabilities in ``params._meta``.

The modes, against any server exposing the two tools below (``bench_server.py`` for minimcp,
``official_server.py`` for the official SDK):

- ``echo``: ``tools/call echo {"text": ...}``; the answer's text must be the text sent.
- ``elicit``: one whole elicitation round trip per call of ``confirm {"n": i}``, which asks one
  yes/no question (``{"confirm": bool}``) and answers ``"confirmed {i}"`` once accepted. On
  2026-07-28 the call answers ``input_required`` and is retried with ``inputResponses`` and the
  echoed ``requestState``; on legacy the call's SSE stream carries ``elicitation/create``, whose
  answer is POSTed on a second connection while the first stream waits for the final result.

``--json`` prints one object: rps, p50_ms, p99_ms, mean_ms, ok, errors, wall_s, and the first errors.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
CLIENT_INFO = {"name": "minimcp-bench-load", "version": "1"}
CAPABILITIES = {"elicitation": {"form": {}}}
ACCEPTED = {"action": "accept", "content": {"confirm": True}}
#: The benchmark flows by name, each an era and a mode of this load (``inprocess.py`` and
#: ``instructions.py`` run them without a socket).
FLOWS = {"echo-2026": (MODERN, "echo"), "echo-legacy": (LEGACY, "echo"),
         "elicit-2026": (MODERN, "elicit"), "elicit-legacy": (LEGACY, "elicit")}


class ProtocolError(Exception):
    """The server answered something the flow does not allow (a wrong status, shape or text)."""


def sse_messages(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON messages of an SSE body, one per event with data, until the body ends (reading it
    to the end is what lets the connection carry the next request)."""
    data: list[bytes] = []
    for raw in iter(response.readline, b""):
        line = raw.rstrip(b"\r\n")
        if line.startswith(b"data:"):
            data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif not line and data:
            payload, data = b"\n".join(data), []
            if payload.strip():
                yield json.loads(payload)
    if data and b"\n".join(data).strip():
        yield json.loads(b"\n".join(data))


class Worker:
    """One client: a keep-alive connection, the era's headers and envelope, and the two flows.
    ``side`` is the legacy answer connection, opened on the first question."""

    def __init__(self, url: str, era: str, timeout: float, wid: int) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"
        self.era = era
        self.timeout = timeout
        self.wid = wid
        self.session_id: str | None = None
        self.next_id = 1
        self.side: http.client.HTTPConnection | None = None
        self.conn = self._open()

    def _open(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        conn.connect()
        return conn

    def reconnect(self) -> None:
        self._close_connections()
        self.conn = self._open()

    def _close_connections(self) -> None:
        for conn in (self.conn, self.side):
            if conn is not None:
                conn.close()
        self.side = None

    def _headers(self, method: str | None, name: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        if self.era == MODERN:
            headers["MCP-Protocol-Version"] = MODERN
            headers.update({key: value for key, value in (("Mcp-Method", method), ("Mcp-Name", name)) if value})
            return headers
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if method != "initialize":
            headers["MCP-Protocol-Version"] = LEGACY
        return headers

    def _post(self, conn: http.client.HTTPConnection, message: dict[str, Any], method: str | None,
              name: str | None) -> http.client.HTTPResponse:
        conn.request("POST", self.path, json.dumps(message, separators=(",", ":")).encode(),
                     self._headers(method, name))
        return conn.getresponse()

    def rpc(self, method: str, params: dict[str, Any], name: str | None = None,
            on_request: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """One request, and the JSON-RPC response to it; ``on_request`` gets each server-to-client
        request that arrives on the response's SSE stream first."""
        rid, self.next_id = self.next_id, self.next_id + 1
        if self.era == MODERN:
            params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                          "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                                          "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}}
        response = self._post(self.conn, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                              method, name)
        if response.status != 200:
            raise ProtocolError(f"{method}: HTTP {response.status} {response.read()[:200]!r}")
        self.session_id = response.getheader("mcp-session-id") or self.session_id
        kind = (response.getheader("content-type") or "").partition(";")[0].strip()
        if kind == "application/json":
            answer = json.loads(response.read())
            return next(m for m in answer if m.get("id") == rid) if isinstance(answer, list) else answer
        if kind != "text/event-stream":
            raise ProtocolError(f"{method}: content type {kind!r}")
        final = None
        for message in sse_messages(response):
            if "method" in message and "id" in message:
                if on_request is None:
                    raise ProtocolError(f"unexpected server request {message['method']}")
                on_request(message)
            elif message.get("id") == rid:
                final = message
        if final is None:
            raise ProtocolError(f"{method}: the stream ended without the answer")
        return final

    def notify(self, method: str) -> None:
        response = self._post(self.conn, {"jsonrpc": "2.0", "method": method}, method, None)
        response.read()
        if response.status not in (200, 202):
            raise ProtocolError(f"{method}: HTTP {response.status}")

    def handshake(self) -> None:
        if self.era == LEGACY:
            answer = self.rpc("initialize", {"protocolVersion": LEGACY, "capabilities": CAPABILITIES,
                                             "clientInfo": CLIENT_INFO})
            if "error" in answer:
                raise ProtocolError(f"initialize: {answer['error']}")
            self.notify("notifications/initialized")

    def close(self) -> None:
        if self.era == LEGACY and self.session_id:
            try:
                self.conn.request("DELETE", self.path, headers=self._headers(None, None))
                self.conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                pass  # the server may have closed the session already
        self._close_connections()

    # --- the flows ---------------------------------------------------------------------------------
    def echo(self, i: int) -> None:
        text = f"echo {self.wid}/{i}"
        result = self.rpc("tools/call", {"name": "echo", "arguments": {"text": text}}, name="echo").get("result")
        if not result or result.get("isError") or result["content"][0]["text"] != text:
            raise ProtocolError(f"echo: {str(result)[:200]}")

    def elicit(self, i: int) -> None:
        call = {"name": "confirm", "arguments": {"n": i}}
        if self.era == MODERN:
            first = self.rpc("tools/call", call, name="confirm").get("result") or {}
            if first.get("resultType") != "input_required":
                raise ProtocolError(f"confirm: expected input_required, got {str(first)[:200]}")
            retry = {**call, "inputResponses": {key: ACCEPTED for key in first.get("inputRequests") or {}}}
            if "requestState" in first:
                retry["requestState"] = first["requestState"]
            result = self.rpc("tools/call", retry, name="confirm").get("result") or {}
        else:
            asked: list[Any] = []
            result = self.rpc("tools/call", call, name="confirm",
                              on_request=lambda request: asked.append(self._answer(request))).get("result") or {}
            if not asked:
                raise ProtocolError("confirm: no elicitation/create arrived")
        if result.get("isError") or result.get("resultType", "complete") != "complete" \
                or result["content"][0]["text"] != f"confirmed {i}":
            raise ProtocolError(f"confirm: {str(result)[:200]}")

    def _answer(self, request: dict[str, Any]) -> Any:
        """Answer a legacy question on the side connection, while the call's stream stays open."""
        if request["method"] != "elicitation/create":
            raise ProtocolError(f"unexpected server request {request['method']}")
        if self.side is None:
            self.side = self._open()
        response = self._post(self.side, {"jsonrpc": "2.0", "id": request["id"], "result": ACCEPTED}, None, None)
        response.read()
        if response.status not in (200, 202):
            raise ProtocolError(f"the answer: HTTP {response.status}")
        return request["id"]


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[round(q * (len(ordered) - 1))] if ordered else float("nan")


def _drive(url: str, era: str, mode: str, shares: list[int], warmup: int, timeout: float,
           start_together: Any, results: Any, base_id: int) -> None:
    """One process's part: a thread per share, started together with the other processes'."""
    workers: list[Worker | None] = []
    setup_errors: list[str] = []
    for t in range(len(shares)):
        try:
            worker = Worker(url, era, timeout, base_id + t)
            worker.handshake()
            for k in range(warmup):
                getattr(worker, mode)(-1 - k)
            workers.append(worker)
        except Exception as exc:  # noqa: BLE001  (counted: every call of this share fails)
            setup_errors.append(repr(exc)[:300])
            workers.append(None)
    latencies: list[list[float]] = [[] for _ in shares]
    errors = [0] * len(shares)
    first_errors: list[str] = []
    go = threading.Barrier(len(shares) + 1)

    def client(t: int) -> None:
        worker = workers[t]
        go.wait()
        if worker is None:
            errors[t] = shares[t]
            return
        call = getattr(worker, mode)
        for i in range(shares[t]):
            began = time.perf_counter()
            try:
                call(i)
            except Exception as exc:  # noqa: BLE001  (a failed call is counted, then the client starts over)
                errors[t] += 1
                first_errors.append(repr(exc)[:300])
                try:
                    worker.reconnect()
                    worker.session_id = None
                    worker.handshake()
                except Exception:  # noqa: BLE001
                    pass
                continue
            latencies[t].append(time.perf_counter() - began)

    threads = [threading.Thread(target=client, args=(t,), daemon=True) for t in range(len(shares))]
    for thread in threads:
        thread.start()
    start_together.wait()
    started = time.monotonic()
    go.wait()
    for thread in threads:
        thread.join()
    ended = time.monotonic()
    for worker in workers:
        if worker is not None:
            worker.close()
    results.put({"started": started, "ended": ended, "latencies": [x for part in latencies for x in part],
                 "errors": sum(errors), "first_errors": first_errors[:3], "setup_errors": setup_errors[:5]})


def run(url: str, era: str, mode: str, n: int, c: int, procs: int = 1, warmup: int = 5,
        timeout: float = 30.0) -> dict[str, Any]:
    """Drive ``n`` calls over ``c`` clients; the figures as ``--json`` prints them."""
    procs = max(1, min(procs, c))
    shares = [n // c + (i < n % c) for i in range(c)]
    context = multiprocessing.get_context("fork")
    start_together = context.Barrier(procs)
    results = context.Queue()
    arguments = [(url, era, mode, shares[p::procs], warmup, timeout, start_together, results, p * 10_000)
                 for p in range(procs)]
    if procs == 1:
        runner: Any = threading.Thread(target=_drive, args=arguments[0])
        runner.start()
        parts = [results.get()]
        runner.join()
    else:
        children = [context.Process(target=_drive, args=a) for a in arguments]
        for child in children:
            child.start()
        parts = [results.get() for _ in children]
        for child in children:
            child.join()
    latencies = sorted(x for part in parts for x in part["latencies"])
    wall = max(p["ended"] for p in parts) - min(p["started"] for p in parts)
    first_errors = [e for p in parts for e in p["first_errors"]]
    return {"url": url, "era": era, "mode": mode, "n": n, "c": c, "procs": procs, "ok": len(latencies),
            "errors": sum(p["errors"] for p in parts), "wall_s": round(wall, 4),
            "rps": round(len(latencies) / wall, 1) if wall > 0 else 0.0,
            "p50_ms": round(_percentile(latencies, 0.5) * 1000, 3),
            "p99_ms": round(_percentile(latencies, 0.99) * 1000, 3),
            "mean_ms": round(statistics.fmean(latencies) * 1000, 3) if latencies else float("nan"),
            "first_error": first_errors[0] if first_errors else None,
            "setup_errors": [e for p in parts for e in p["setup_errors"]][:5]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", help="the MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
    ap.add_argument("--era", default=MODERN, choices=[MODERN, LEGACY, "modern", "legacy"])
    ap.add_argument("--mode", default="echo", choices=["echo", "elicit"])
    ap.add_argument("-n", type=int, default=2000, help="calls (round trips in elicit mode)")
    ap.add_argument("-c", type=int, default=8, help="concurrent clients, one connection each")
    ap.add_argument("--procs", type=int, default=1, help="processes the clients are spread over")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls per client first")
    ap.add_argument("--timeout", type=float, default=30.0, help="socket timeout in seconds")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    era = {"modern": MODERN, "legacy": LEGACY}.get(args.era, args.era)
    figures = run(args.url, era, args.mode, args.n, args.c, args.procs, args.warmup, args.timeout)
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"{args.mode} {era} c={args.c} n={args.n}: {figures['rps']}/s p50 {figures['p50_ms']} ms "
              f"p99 {figures['p99_ms']} ms, {figures['errors']} errors"
              + (f" (first: {figures['first_error']})" if figures["first_error"] else "")
              + (f" setup: {figures['setup_errors']}" if figures["setup_errors"] else ""))
    sys.exit(1 if figures["errors"] or not figures["ok"] else 0)


if __name__ == "__main__":
    main()
