"""The server ``soak.py`` drives: the benchmark server's ``echo`` and ``confirm``, both eras.

Short bounds so the soak's "never answer" and "disconnect" cases release their workers quickly:
``back_channel_timeout`` 3 s, SSE keepalive 1 s. ``app`` is the WSGI callable for gunicorn;
``python benchmarks/soak_server.py PORT`` serves it with minimcp's keep-alive HTTP server (what
``mcp.run`` uses) instead.
"""

from __future__ import annotations

import sys

from bench_server import build_server
from serving import serve_httpd

mcp = build_server(64, back_channel_timeout=3.0)
app = mcp.wsgi_app(keepalive_interval=1.0, session_idle_timeout=60.0)

if __name__ == "__main__":
    serve_httpd(app, "127.0.0.1", int(sys.argv[1]))
