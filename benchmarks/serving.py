"""How the benchmark and soak scripts serve a WSGI app: minimcp's HTTP server or gunicorn.

One home for the gunicorn command line (gthread workers, one process, this folder on the path)
and for the minimcp server loop, so every measured server is started the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def server_arguments(description: str | None) -> argparse.ArgumentParser:
    """The command line every measured server takes: PORT, --server httpd|gunicorn, --host, --threads."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", type=int)
    ap.add_argument("--server", default="httpd", choices=["httpd", "gunicorn"])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--threads", type=int, default=32, help="gunicorn gthread threads")
    return ap


def gunicorn_command(app_ref: str, host: str, port: int, threads: int, *extra: str) -> list[str]:
    """The gunicorn command serving ``app_ref`` (``module:app`` in this folder) with gthread workers."""
    return [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--threads", str(threads), "-w", "1",
            "-b", f"{host}:{port}", "--chdir", HERE, "--log-level", "warning", *extra, app_ref]


def exec_gunicorn(app_ref: str, host: str, port: int, threads: int) -> None:
    """Replace this process with gunicorn, so the PID the caller watches is gunicorn's master."""
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    command = gunicorn_command(app_ref, host, port, threads)
    os.execv(command[0], command)


def serve_httpd(app: Any, host: str, port: int) -> None:
    """Serve ``app`` with minimcp's keep-alive HTTP server (what ``mcp.run`` uses) until interrupted."""
    from minimcp.server.httpd import WSGIServer

    try:
        WSGIServer(app, host, port).run()
    finally:
        close = getattr(app, "close", None)
        if close is not None:
            close()
