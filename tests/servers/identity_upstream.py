"""The upstream of tests/test_proxy_identity.py: a billing service that records the headers of
every request it receives, so a test can tell what a gateway sent it and what it never did.

Two tools: ``whoami`` echoes the bearer token the call came with, ``refund`` pretends to refund;
a caller whose bearer is ``billing-carol`` (a clerk) is not shown ``refund`` and cannot call it,
and one whose bearer ends in ``-revoked`` is answered 401.
``GET /seen`` answers the headers of every request so far (a JSON list of objects, names in lower
case). Run as ``python identity_upstream.py``: it serves on a loopback port it picks and prints
``billing at http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any, Callable

from minimcp.httpd import WSGIServer
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

def _bearer(ctx: Context) -> str:
    authorization = (ctx.headers or {}).get("authorization", "")
    return authorization.removeprefix("Bearer ") or "no bearer"


def clerks_do_not_refund(ctx: Context, component: Any) -> bool:
    return component.name != "refund" or _bearer(ctx) != "billing-carol"


mcp = MCPServer("billing", component_filter=clerks_do_not_refund)
# _lock guards _seen: requests arrive on the server's threads.
_lock = threading.Lock()
_seen: list[dict[str, str]] = []


@mcp.tool()
def whoami(ctx: Context) -> str:
    """The bearer token this call came with."""
    return _bearer(ctx)


@mcp.tool()
def refund(invoice: int, ctx: Context) -> str:
    """Refund an invoice (in words only)."""
    return f"refunded invoice {invoice} for {_bearer(ctx)}"


def recording(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """``app``, keeping every request's headers; ``GET /seen`` answers them."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/seen":
            with _lock:
                body = json.dumps(_seen).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        headers = {key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items()
                   if key.startswith("HTTP_")}
        with _lock:
            _seen.append(headers)
        if headers.get("authorization", "").endswith("-revoked"):
            start_response("401 Unauthorized", [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")])
            return [b"this token was revoked"]
        return app(environ, start_response)

    return serve


if __name__ == "__main__":
    wsgi = mcp.wsgi_app()
    server = WSGIServer(recording(wsgi), "127.0.0.1", 0)
    print(f"billing at http://127.0.0.1:{server.port}{wsgi.path}", flush=True)
    server.serve_forever()
