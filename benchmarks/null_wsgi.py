"""Protocol-free ceiling: a raw WSGI app on the same WSGI servers minimcp runs on.

The WSGI twin of /work/shared/bench/null_asgi.py. It is not an MCP server (no validation, no
sessions, no schema): it parses the JSON-RPC body and answers ``tools/call echo`` with the same
result shape the SDKs send, ``initialize`` with a minimal result, and notifications with 202. Its
throughput is the ceiling that the WSGI server + load.py reach on this machine; minimcp's number
divided by it is the share of the budget left after the MCP layer.

Usage:
    python benchmarks/null_wsgi.py PORT [--server httpd|gunicorn] [--threads 32]

``app`` is the WSGI application (``gunicorn --worker-class gthread --threads 32 -w 1
--chdir benchmarks null_wsgi:app``).
"""

from __future__ import annotations

import json

from serving import exec_gunicorn, serve_httpd, server_arguments  # this folder is on sys.path

_JSON_HEADERS = [("Content-Type", "application/json")]


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


def app(environ, start_response):
    if environ["REQUEST_METHOD"] != "POST":
        start_response("405 Method Not Allowed", [("Content-Length", "0")])
        return [b""]
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    msg = json.loads(body)
    if "id" not in msg:
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]
    out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": _result(msg)}, separators=(",", ":")).encode()
    start_response("200 OK", [*_JSON_HEADERS, ("Content-Length", str(len(out)))])
    return [out]


def main() -> None:
    args = server_arguments(__doc__).parse_args()
    if args.server == "gunicorn":
        exec_gunicorn("null_wsgi:app", args.host, args.port, args.threads)
    serve_httpd(app, args.host, args.port)

if __name__ == "__main__":
    main()
