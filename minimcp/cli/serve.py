"""The verbs that serve a file: ``run`` (stdio or HTTP) and ``dev`` (HTTP, reloaded on change, with the
MCP Inspector).

``dev`` keeps the server in a child process (``minimcp run FILE --http``) so a change is a clean
restart: the new code imported from scratch, on the same port, so the Inspector stays pointed at it.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from argparse import Namespace
from pathlib import Path
from typing import IO, Any

from minimcp.cli.errors import CLIError
from minimcp.cli.target import Target, load_server

#: How often ``dev`` looks for changed files, in seconds.
POLL = 0.5
#: How long a server process may take to import its file and listen, in seconds.
STARTUP = 60.0
#: How long a stopped process has to exit before it is killed, in seconds.
STOP = 10.0
#: The line ``serve_http`` logs once it listens.
_ANNOUNCED = re.compile(r"serving MCP on (http://\S+)")
INSPECTOR = "@modelcontextprotocol/inspector"
NODE_HINT = ("the MCP Inspector runs on Node.js, and npx was not found on PATH: install Node.js 22 or later "
             "from https://nodejs.org (or `brew install node`, `apt install nodejs npm`), then run minimcp dev "
             "again; meanwhile any MCP client can use the server at {url}")


def need_file(target: Target, verb: str) -> Path:
    if target.file is None:
        raise CLIError(f"{verb} serves a server file (minimcp {verb} server.py); a URL or a command is a server "
                       "already: inspect or call it instead")
    return target.file


def run(target: Target, options: Namespace) -> int:
    file = need_file(target, "run")
    if file.suffix == ".json":  # an mcpServers configuration: its servers as one
        from minimcp.server.app.proxy import ProxyConfigError, create_proxy

        try:
            server = create_proxy(file)
        except ProxyConfigError as wrong:
            raise CLIError(f"{file}: {wrong}") from None
    else:
        server = load_server(target)
    return serve(server, options)


def serve(server: Any, options: Namespace) -> int:
    """Serve ``server`` over stdio, or over HTTP where ``options.http`` says so, until stopped."""
    if not options.http:
        server.run()
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)  # says where it listens
    server.run(transport="streamable-http", host=options.host, port=options.port)
    return 0


class Child:
    """``minimcp run FILE --http`` in its own process; its stderr is echoed, and read for the URL."""

    def __init__(self, target: Target, host: str, port: int, err: IO[str]) -> None:
        self.err = err
        command = [sys.executable, "-m", "minimcp", "run", target.spec, "--http", "--host", host, "--port", str(port)]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self._urls: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._echo, name="minimcp-dev-output", daemon=True).start()

    def _echo(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.err.write(line)
            self.err.flush()
            announced = _ANNOUNCED.search(line)
            if announced:
                self._urls.put(announced[1])
        self._urls.put(None)

    def url(self) -> str | None:
        """Where it listens, once it does (within ``STARTUP``); ``None`` if it exited first."""
        try:
            return self._urls.get(timeout=STARTUP)
        except queue.Empty:
            return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP)


def _snapshot(folder: Path) -> dict[Path, int]:
    """The modification times of the Python files beside the server file (its own modules)."""
    stamps = {}
    for path in folder.glob("*.py"):
        try:
            stamps[path] = path.stat().st_mtime_ns
        except OSError:  # removed between the listing and the look
            continue
    return stamps


def dev(target: Target, options: Namespace) -> int:
    file = need_file(target, "dev")
    err = sys.stderr
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated dev stops its server and Inspector too
    child = Child(target, options.host, options.port, err)
    url = child.url()
    if url is None:
        child.stop()
        raise CLIError(f"{file.name} did not start serving (its output is above); fix it and run minimcp dev again")
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])  # a restart keeps the port the Inspector knows
    err.write(f"minimcp dev: serving {file.name} at {url}; it reloads when a .py file in {file.parent} changes\n")
    with tempfile.TemporaryDirectory(prefix="minimcp-dev-") as scratch:
        inspector = _start_inspector(url, Path(scratch), err)
        stamps = _snapshot(file.parent)
        try:
            while True:
                time.sleep(POLL)
                now = _snapshot(file.parent)
                if now == stamps:
                    continue
                stamps = now
                err.write(f"minimcp dev: a change in {file.parent}; reloading {file.name}\n")
                child.stop()
                child = Child(target, options.host, port, err)
                if child.url() is None:
                    err.write(f"minimcp dev: {file.name} stopped (see above); save a fix to reload it\n")
                else:
                    err.write(f"minimcp dev: reloaded {file.name} at {url}\n")
                err.flush()
        except KeyboardInterrupt:
            return 0
        finally:
            child.stop()
            if inspector is not None and inspector.poll() is None:
                inspector.terminate()
                try:
                    inspector.wait(STOP)
                except subprocess.TimeoutExpired:
                    inspector.kill()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _start_inspector(url: str, scratch: Path, err: IO[str]) -> subprocess.Popen[Any] | None:
    """``npx @modelcontextprotocol/inspector`` with a config naming the server, or the hint to get Node.js."""
    npx = shutil.which("npx")
    if npx is None:
        err.write("minimcp dev: " + NODE_HINT.format(url=url) + "\n")
        err.flush()
        return None
    config = scratch / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"minimcp-dev": {"type": "streamable-http", "url": url}}}))
    err.write(f"minimcp dev: starting the MCP Inspector ({npx} {INSPECTOR}), pointed at {url}\n")
    err.flush()
    return subprocess.Popen([npx, INSPECTOR, "--config", str(config), "--server", "minimcp-dev"])
