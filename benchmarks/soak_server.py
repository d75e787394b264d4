"""The server ``soak.py`` drives: ``echo`` and ``confirm`` (one elicitation), both eras.

Short bounds so the soak's "never answer" and "disconnect" cases release their workers quickly:
``back_channel_timeout`` 3 s, SSE keepalive 1 s. ``app`` is the WSGI callable for gunicorn;
``python benchmarks/soak_server.py PORT`` serves it with werkzeug's threaded server instead.
"""

from __future__ import annotations

import logging
import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from pydantic import BaseModel  # noqa: E402

from minimcp.server import MCPServer  # noqa: E402
from minimcp.server.mcpserver import Context  # noqa: E402

logging.getLogger("werkzeug").setLevel(logging.WARNING)


class Confirmation(BaseModel):
    confirm: bool


def build_server() -> MCPServer:
    server = MCPServer("soak", log_level="WARNING", max_workers=64, back_channel_timeout=3.0)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def confirm(n: int, ctx: Context) -> str:
        """Ask to confirm item n; the answer names the item, so a misrouted answer shows."""
        result = ctx.elicit(f"Proceed with item {n}?", schema=Confirmation)
        return f"{result.action} {n}"

    return server


mcp = build_server()
app = mcp.wsgi_app(keepalive_interval=1.0, session_idle_timeout=60.0)

if __name__ == "__main__":
    from werkzeug.serving import make_server

    httpd = make_server("127.0.0.1", int(sys.argv[1]), app, threaded=True)
    try:
        httpd.serve_forever()
    finally:
        app.close()
