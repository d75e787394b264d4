"""A WSGI app with a meter around it: the CPU time its own thread spends in each call, added up.

    METERED_APP=bench_server:app python benchmarks/metered.py PORT [--server S] [--threads 32]

``METERED_APP`` names the app (``module:name`` in this folder: ``bench_server:app``, minimcp's
benchmark server, or ``null_wsgi:app``, the protocol-free one). Each call is timed with
``time.thread_time()`` from the app's entry until its body is iterated, which is when a WSGI server
has the whole answer; so the figure is the app's own work (its body read included), not the
server's. ``GET /__metered`` answers the calls and seconds so far as JSON; ``app_cpu.py`` reads it.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from typing import Any, Iterable

from serving import serve, server_arguments  # this folder is on sys.path

_module, _, _name = os.environ.get("METERED_APP", "bench_server:app").partition(":")
_inner = getattr(importlib.import_module(_module), _name)
# _lock guards _totals: [calls, seconds].
_lock = threading.Lock()
_totals = [0, 0.0]


def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    if environ.get("PATH_INFO") == "/__metered":
        with _lock:
            body = json.dumps({"calls": _totals[0], "seconds": _totals[1]}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    started = time.thread_time()
    result = _inner(environ, start_response)
    try:
        body = list(result)  # every answer measured here is one JSON body
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    spent = time.thread_time() - started
    with _lock:
        _totals[0] += 1
        _totals[1] += spent
    return body


def main() -> None:
    serve(app, "metered:app", server_arguments(__doc__).parse_args())


if __name__ == "__main__":
    main()
