"""Protocol-free ceiling: a raw WSGI app on the same WSGI servers minimcp runs on.

It is not an MCP server (no validation, no sessions, no schema): it parses the JSON-RPC body and
answers ``tools/call echo`` with the same result shape the SDKs send, ``initialize`` with a
minimal result, and notifications with 202. A server's figure with it is the cost of that HTTP
server (and load.py) alone; minimcp's figure on the same server, minus this one, is minimcp's own.

Usage:
    python benchmarks/null_wsgi.py PORT [--server httpd|gunicorn|granian|waitress|uwsgi] [--threads 32]

``app`` is the WSGI application; ``answer`` is shared with ``null_asgi.py``. Under a threaded
gunicorn, waitress or granian it keeps the process's threads on one CPU, as ``mcp.wsgi_app()``
does by default (``ProcessPin``): the difference from minimcp's figure is then minimcp's protocol
work, not the pin (on minimcp's own server both are pinned by the server).
"""

from __future__ import annotations

import json
from typing import Any

from serving import serve, server_arguments  # this folder is on sys.path

from minimcp.httpd.affinity import ProcessPin

_JSON_HEADERS = [("Content-Type", "application/json")]
_PIN = ProcessPin()


def _result(msg: dict) -> dict:
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "null-wsgi", "version": "0"},
        }
    if method == "tools/call" and params.get("name") == "echo":
        text = (params.get("arguments") or {}).get("text", "")
        return {
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "resultType": "complete",
            "structuredContent": {"result": text},
        }
    return {}


def answer(method: str, body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    """(status, headers, body) for one request."""
    if method != "POST":
        return "405 Method Not Allowed", [("Content-Length", "0")], b""
    msg = json.loads(body)
    if "id" not in msg:
        return "202 Accepted", [("Content-Length", "0")], b""
    out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": _result(msg)}, separators=(",", ":")).encode()
    return "200 OK", [*_JSON_HEADERS, ("Content-Length", str(len(out)))], out


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    _PIN.touch(environ)
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    status, headers, out = answer(environ["REQUEST_METHOD"], body)
    start_response(status, headers)
    return [out]


def main() -> None:
    serve(app, "null_wsgi:app", server_arguments(__doc__).parse_args())


if __name__ == "__main__":
    main()
