#!/usr/bin/env python3
"""The road of one 2026-07-28 ``tools/call`` through minimcp's WSGI app: which files it enters.

    python benchmarks/walk.py [--tool echo|greet|both] [--progress] [--steps]

A profiler hook on every thread records each call of a function in one of minimcp's files, in
order. A *visit* begins wherever a thread's call is in another file than its call before: a call
out to another file is one, and so is the caller's next call of its own after that one returned,
since the road came back through it. A *re-entry* is a visit to a file already visited. The request is made in-process, with the
environ a WSGI server would build, after a few warm-up calls: to another server first (the module
caches), then one to the server measured, with the hook in place but not recording (its worker
threads start under the hook, and its own first-use caches are filled).

``echo(text)`` can send nothing before its answer (its plan is silent), so it runs with no round;
``greet(name, ctx)`` takes a ``Context`` (it could ask, log or report progress), so it runs in a
round (``run_round``), which opens the answer book it asks through. Both run on the thread that received
them: a 2026-07-28 request over HTTP has no back channel, and one that asked for no progress and no
log messages has nothing to stream (``Dispatcher.quiet``). ``--progress`` sends a progress token
with each call, so that ``greet`` runs on a worker and is answered as an SSE stream (the road of a
call whose caller listens to it; ``echo`` still runs where it was received, since it can report
nothing). ``--steps`` prints every visit: the file before, entered file, function.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import threading
from collections import Counter
from typing import Any

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, _REPO)

import minimcp  # noqa: E402
from minimcp.server import MCPServer  # noqa: E402
from minimcp.server.mcpserver import Context  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(minimcp.__file__)) + os.sep
VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "walk", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def build() -> Any:
    mcp = MCPServer("walk")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def greet(name: str, ctx: Context) -> str:
        return f"hello {name} from {ctx.request_id}"

    return mcp.wsgi_app()


def call(app: Any, tool: str, n: int, progress: bool = False) -> bytes:
    """One ``tools/call`` through ``app``, as a WSGI server would hand it over; the answer's body."""
    body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": tool, "arguments": {"text" if tool == "echo" else "name": "x"},
                                  "_meta": {**META, "progressToken": n} if progress else META}}).encode()
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
               "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
               "HTTP_HOST": "127.0.0.1:8000", "HTTP_ACCEPT": "application/json, text/event-stream",
               "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
               "wsgi.url_scheme": "http", "wsgi.multithread": True, "wsgi.multiprocess": False,
               "wsgi.errors": sys.stderr, "HTTP_MCP_PROTOCOL_VERSION": VERSION, "HTTP_MCP_METHOD": "tools/call",
               "HTTP_MCP_NAME": tool}
    status: list[str] = []
    chunks = app(environ, lambda line, headers, exc_info=None: status.append(line))
    try:
        answer = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    if not status[0].startswith("200") or b'"result"' not in answer:
        raise SystemExit(f"{tool}: {status[0]} {answer[:200]!r}")
    return answer


def walk(tool: str, progress: bool) -> list[tuple[str | None, str, str]]:
    """The visits of one call: (the file before, entered file, function), in order."""
    warm = build()
    for n in range(5):
        call(warm, tool, n, progress)
    warm.close()
    app = build()
    visits: list[tuple[str | None, str, str]] = []
    recording = threading.Event()
    last: dict[int, str] = {}  # thread -> the file of its last call; written by that thread only

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or not recording.is_set() or not frame.f_code.co_filename.startswith(ROOT):
            return
        entered = frame.f_code.co_filename[len(ROOT):]
        came_from = last.get(threading.get_ident())
        if came_from != entered:
            visits.append((came_from, entered, frame.f_code.co_name))
            last[threading.get_ident()] = entered

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        call(app, tool, 98, progress)
        recording.set()
        call(app, tool, 99, progress)
        recording.clear()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        app.close()
    return visits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", choices=["echo", "greet", "both"], default="both")
    parser.add_argument("--progress", action="store_true", help="each call carries a progress token")
    parser.add_argument("--steps", action="store_true", help="print every visit")
    args = parser.parse_args()
    for tool in ["echo", "greet"] if args.tool == "both" else [args.tool]:
        visits = walk(tool, args.progress)
        files = Counter(entered for _, entered, _ in visits)
        print(f"{tool}: {len(files)} files, {len(visits)} visits, {len(visits) - len(files)} re-entries")
        for name, count in files.most_common():
            print(f"  {count:3d}  {name}")
        if args.steps:
            for came_from, entered, function in visits:
                print(f"    {came_from} -> {entered}:{function}")


if __name__ == "__main__":
    main()
