"""How the benchmark and soak scripts serve a WSGI app: minimcp's HTTP server or a production one.

One home for each server's command line, so every measured server is started the same way: one
process, 32 request threads, this folder on the path, logging at warning and no access log.

    httpd     minimcp's keep-alive server (what ``mcp.run`` uses), in this process
    httpd-h11 the same with its h11 parser (``serve_httpd``'s callers: null_wsgi.py)
    gunicorn  ``gunicorn --worker-class gthread --threads 32 -w 1``
    gunicorn-httpd  ``gunicorn --worker-class minimcp.httpd.gunicorn.Worker --threads 32 -w 1``
              (gunicorn's process management, minimcp's HTTP server in the worker)
    granian   ``granian --interface wsgi --workers 1 --blocking-threads 32`` (Rust HTTP, WSGI on threads)
    waitress  ``waitress-serve --threads 32``
    uwsgi     ``uwsgi --http11-socket --threads 32`` (pyuwsgi's binary; one process, no master)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SERVERS = ("httpd", "httpd-h11", "gunicorn", "gunicorn-httpd", "granian", "waitress", "uwsgi")
#: The gunicorn worker class of each gunicorn entry of ``SERVERS``.
GUNICORN_WORKERS = {"gunicorn": "gthread", "gunicorn-httpd": "minimcp.httpd.gunicorn.Worker"}


def server_arguments(description: str | None) -> argparse.ArgumentParser:
    """The command line every measured server takes: PORT, --server NAME, --host, --threads."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", type=int)
    ap.add_argument("--server", default="httpd", choices=SERVERS)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--threads", type=int, default=32, help="request threads of the production servers")
    return ap


def gunicorn_command(app_ref: str, host: str, port: int, threads: int, *extra: str,
                     worker_class: str = "gthread") -> list[str]:
    """The gunicorn command serving ``app_ref`` (``module:app`` in this folder) with one worker of ``worker_class``."""
    return [sys.executable, "-m", "gunicorn", "--no-control-socket", "--worker-class", worker_class,
            "--threads", str(threads), "-w", "1", "-b", f"{host}:{port}", "--chdir", HERE, "--log-level", "warning",
            *extra, app_ref]


def _script(name: str) -> str:
    """A console script of this interpreter's environment (the servers install one each)."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.path.exists(beside) else (shutil.which(name) or name)


def server_command(server: str, app_ref: str, host: str, port: int, threads: int) -> list[str]:
    """The command line serving ``app_ref`` with ``server`` (any of ``SERVERS`` but httpd)."""
    if server in GUNICORN_WORKERS:
        return gunicorn_command(app_ref, host, port, threads, worker_class=GUNICORN_WORKERS[server])
    if server == "granian":
        return [_script("granian"), "--interface", "wsgi", "--host", host, "--port", str(port), "--workers", "1",
                "--blocking-threads", str(threads), "--no-ws", "--log-level", "warning", "--working-dir", HERE,
                app_ref]
    if server == "waitress":
        return [_script("waitress-serve"), "--host", host, "--port", str(port), "--threads", str(threads), app_ref]
    if server == "uwsgi":
        module, _, name = app_ref.partition(":")
        return [_script("uwsgi"), "--http11-socket", f"{host}:{port}", "--threads", str(threads), "--processes", "1",
                "--module", f"{module}:{name}", "--chdir", HERE, "--disable-logging", "--die-on-term",
                "--buffer-size", "65535", "--lazy-apps"]
    raise ValueError(f"unknown server {server!r}")


def exec_server(server: str, app_ref: str, host: str, port: int, threads: int) -> None:
    """Replace this process with ``server``, so the PID the caller watches is the server's."""
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, REPO, os.environ.get("PYTHONPATH")) if p)
    os.chdir(HERE)
    command = server_command(server, app_ref, host, port, threads)
    os.execv(command[0], command)


def serve(app: Any, app_ref: str, args: argparse.Namespace) -> None:
    """Serve ``app`` (importable as ``app_ref``) as ``server_arguments`` asked."""
    if not args.server.startswith("httpd"):
        exec_server(args.server, app_ref, args.host, args.port, args.threads)
    serve_httpd(app, args.host, args.port, parser="h11" if args.server == "httpd-h11" else None)


def serve_httpd(app: Any, host: str, port: int, parser: str | None = None) -> None:
    """Serve ``app`` with minimcp's keep-alive HTTP server (what ``mcp.run`` uses) until interrupted;
    ``parser`` names its request parser (``None``: the one it picks)."""
    from minimcp.httpd import WSGIServer

    try:
        WSGIServer(app, host, port, parser=parser).run()
    finally:
        close = getattr(app, "close", None)
        if close is not None:
            close()
