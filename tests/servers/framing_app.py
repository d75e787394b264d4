"""A protocol-free WSGI app that shows which requests a server let through, for the framing parity
test: it answers ``served METHOD PATH LENGTH`` after reading the body, or without reading it when
the path is ``/unread``. Served by minimcp's HTTP server and, the same file, by gunicorn."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = b"" if environ["PATH_INFO"] == "/unread" else environ["wsgi.input"].read()
    answer = f"served {environ['REQUEST_METHOD']} {environ['PATH_INFO']} {len(body)}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(answer)))])
    return [answer]
