"""The minimcp benchmark server: the tools ``load.py`` drives.

Tools (exactly load.py's contract, and the same as the official SDK's ``official_server.py``):

    echo(text: str) -> str      returns ``text`` unchanged
    confirm(n: int) -> str      asks one yes/no question with ``ctx.elicit`` (schema ``{confirm: bool}``),
                                then answers ``"confirmed {n}"`` on accept + true, else ``"declined {n}"``.
                                Works on both eras: legacy = SSE ``elicitation/create`` -> POSTed
                                answer; 2026-07-28 = ``input_required`` -> retry with ``inputResponses``.

Usage:
    python benchmarks/bench_server.py PORT [--server httpd|gunicorn|granian|waitress|uwsgi] [--threads 32] [--max-workers N] [--auth]
                                           [--max-connections N]

    httpd     ``mcp.run(transport="streamable-http")``: minimcp's keep-alive HTTP server (what
              ``mcp.run`` uses; the library's own ``serve_http``).
    gunicorn, granian, waitress, uwsgi   that server with 32 request threads in one process, as
              ``serving.py`` starts it (this process execs it, so the PID stays the server's).

``--auth`` (httpd only) protects the endpoint: every call needs an RS256 JWT that ``JWTVerifier``
checks against the JWKS in the file ``BENCH_JWKS_FILE`` names, which this server also serves at
``/jwks.json`` (the verifier fetches it from there once, as it would from an identity provider).

The endpoint is ``http://127.0.0.1:PORT/mcp``. ``app`` is the WSGI application for any WSGI server.
The worker pool size comes from ``--max-workers`` or the ``BENCH_MAX_WORKERS`` environment variable
(default: the library default, 32); holding 1,000 legacy questions open at once needs more.
``BENCH_BACKEND`` (a Redis URL) is the server's ``backend=`` (``shared_state.py`` measures it).
Logging is at WARNING, as the official peer runs (no per-request access log).
"""

from __future__ import annotations

import os
import sys
from typing import Any

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, _REPO)

from pydantic import BaseModel  # noqa: E402

from minimcp.server import Limits, MCPServer  # noqa: E402
from minimcp.server.mcpserver import Context  # noqa: E402
from serving import exec_server, server_arguments  # noqa: E402  (this folder is on sys.path)


class Confirmation(BaseModel):
    confirm: bool


def build_server(max_workers: int = 0, **options: Any) -> MCPServer:
    """The benchmark server; ``max_workers`` 0 keeps the library's default pool size, ``options``
    are further ``MCPServer`` settings (the soak server shortens ``back_channel_timeout``)."""
    if max_workers > 0:
        options["max_workers"] = max_workers
    options.setdefault("backend", os.environ.get("BENCH_BACKEND") or None)
    # The load generator is one principal (one address, a handful of sessions): it gets the whole
    # pool, since what is measured is the pool itself, not the per-caller shares.
    workers = options.get("max_workers", Limits().max_workers)
    options.setdefault("max_calls_per_principal", workers)
    options.setdefault("max_questions_per_principal", workers)
    server = MCPServer("bench-minimcp", log_level="WARNING", **options)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def confirm(n: int, ctx: Context) -> str:
        """Ask the user to confirm item n, then report the decision."""
        result = ctx.elicit(f"Proceed with item {n}?", schema=Confirmation)
        if result.action == "accept" and result.data.confirm:
            return f"confirmed {n}"
        return f"declined {n}"

    return server


MAX_WORKERS = int(os.environ.get("BENCH_MAX_WORKERS", "0") or 0)
#: One session may hold as many open questions as there are workers (the 1,000-outstanding test).
MAX_PENDING = max(32, MAX_WORKERS)
mcp = build_server(MAX_WORKERS)
app = mcp.wsgi_app(max_pending_per_session=MAX_PENDING)


def build_protected_server(port: int) -> MCPServer:
    """The benchmark server behind RS256 bearer tokens (see ``jwt_keys.py`` for the issuer and audience)."""
    from jwt_keys import AUDIENCE, ISSUER
    from werkzeug.wrappers import Request, Response

    from minimcp.server.auth.jwt_verifier import JWTVerifier
    from minimcp.server.auth.settings import AuthSettings

    with open(os.environ["BENCH_JWKS_FILE"], "rb") as f:
        jwks = f.read()
    verifier = JWTVerifier(jwks_uri=f"http://127.0.0.1:{port}/jwks.json", issuer=ISSUER, audience=AUDIENCE)
    server = build_server(auth=AuthSettings(issuer_url=ISSUER, resource_server_url=AUDIENCE,
                                            validate_token_resource=False), token_verifier=verifier)

    @server.custom_route("/jwks.json", ["GET"])
    def keys(request: Request) -> Response:
        return Response(jwks, content_type="application/json")

    return server


def main() -> None:
    ap = server_arguments(__doc__)
    ap.add_argument("--max-workers", type=int, default=0, help="MCPServer(max_workers=...) (0: library default)")
    ap.add_argument("--auth", action="store_true", help="require RS256 JWTs (BENCH_JWKS_FILE; httpd only)")
    ap.add_argument("--max-connections", type=int, default=0, help="the HTTP server's cap (0: library default)")
    args = ap.parse_args()
    if args.auth:
        build_protected_server(args.port).run(transport="streamable-http", host=args.host, port=args.port)
        return
    if args.max_workers:
        os.environ["BENCH_MAX_WORKERS"] = str(args.max_workers)  # gunicorn's worker builds its own
    if args.server != "httpd":
        exec_server(args.server, "bench_server:app", args.host, args.port, args.threads)
    server = build_server(args.max_workers) if args.max_workers else mcp
    limits = {"max_connections": args.max_connections} if args.max_connections else {}
    server.run(transport="streamable-http", host=args.host, port=args.port,
               max_pending_per_session=max(32, args.max_workers), **limits)

if __name__ == "__main__":
    main()
