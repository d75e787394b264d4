"""Several real server processes behind a deterministic round robin, for the multi-process tests.

- ``RoundRobin(bases)``: a ``requests.Session`` whose every request goes to the next base URL, on a
  new connection (the kernel spreads connections unevenly; this makes the spread deterministic);
- ``AsyncRoundRobin(bases)``: the same as an ``httpx2`` transport, for the official SDK's client;
- ``gunicorns(count, workers, env)``: ``count`` gunicorns of ``tests/servers/shared_server.py``, each
  with ``workers`` gthread workers, on ports they bind themselves and announce;
  ``worker_command(workers)``: one gunicorn of it on minimcp's worker class;
- ``client_of(server)``: a ``Client`` of a multi-process server whose every request opens a new
  connection; ``pids_answering(server, calls)``: which processes answered ``calls`` calls of ``pid``;
  ``accept``: the elicitation callback the shared server's ``confirm`` tool is answered with.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import requests
from conftest import ROOT, ServerProcess, server_process

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.types import ElicitResult

SERVERS = Path(__file__).parent / "servers"


def _rebased(url: str, base: str) -> str:
    """``url`` with the scheme and authority of ``base``."""
    target, parts = urlsplit(base), urlsplit(url)
    return urlunsplit((target.scheme, target.netloc, parts.path, parts.query, parts.fragment))


class RoundRobin(requests.Session):
    """Every request to the next of ``bases``, each on a connection of its own (``Connection: close``)."""

    def __init__(self, bases: Sequence[str]) -> None:
        super().__init__()
        self.bases = list(bases)
        # _lock guards _turn: concurrent requests of one client (a GET stream and a POST) take turns.
        self._lock = threading.Lock()
        self._turn = itertools.cycle(self.bases)
        self.sent: list[str] = []

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        with self._lock:
            base = next(self._turn)
            self.sent.append(base)
        headers = dict(kwargs.pop("headers", None) or {})
        headers["Connection"] = "close"
        return super().request(method, _rebased(str(url), base), *args, headers=headers, **kwargs)


class AsyncRoundRobin(httpx2.AsyncBaseTransport):
    """``RoundRobin`` for an ``httpx2.AsyncClient``: each request to the next base, never kept alive."""

    def __init__(self, bases: Sequence[str]) -> None:
        self._turn = itertools.cycle(list(bases))
        self._inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        base = urlsplit(next(self._turn))
        self.sent.append(base.netloc)
        request.url = request.url.copy_with(host=base.hostname, port=base.port)
        request.headers["Host"] = base.netloc
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def server_env(backend: str | None, client_options: dict[str, Any] | None = None) -> dict[str, str]:
    """The environment of a ``shared_server.py`` on ``backend``, through a Redis client made with
    ``client_options`` when they are given."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(SERVERS), os.environ.get("PYTHONPATH", "")])}
    env.pop("MINIMCP_TEST_BACKEND", None)
    env.pop("MINIMCP_TEST_REDIS_CLIENT", None)
    if backend is not None:
        env["MINIMCP_TEST_BACKEND"] = backend
    if client_options is not None:
        env["MINIMCP_TEST_REDIS_CLIENT"] = json.dumps(client_options)
    return env


def gunicorn_command(workers: int) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-w", str(workers), "-k", "gthread", "--threads", "8",
            "--no-control-socket", "--graceful-timeout", "2", "-b", "127.0.0.1:0", "shared_server:app"]


#: minimcp's gunicorn worker class.
WORKER = "minimcp.httpd.gunicorn.Worker"


def worker_command(workers: int, *extra: str, bind: str = "127.0.0.1:0") -> list[str]:
    """gunicorn serving the shared server with ``workers`` workers of minimcp's worker class."""
    return [sys.executable, "-m", "gunicorn", "-w", str(workers), "-k", WORKER, "--threads", "8",
            "--no-control-socket", "--graceful-timeout", "20", "-b", bind, *extra, "shared_server:app"]


def accept(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


def client_of(server: ServerProcess, **options: Any) -> tuple[Client, RoundRobin]:
    """A client whose every request opens a new connection, so the kernel spreads them over the workers."""
    rotating = RoundRobin([server.base])
    return Client(streamable_http_client(server.base + "/mcp", http_client=rotating), **options), rotating


def pids_answering(server: ServerProcess, calls: int, **options: Any) -> list[int]:
    client, _ = client_of(server, **options)
    with client:
        return [client.call_tool("pid", {}).structured_content["result"] for _ in range(calls)]


@contextlib.contextmanager
def gunicorns(count: int, workers: int, backend: str | None) -> Iterator[list[ServerProcess]]:
    """``count`` gunicorn masters of the shared server, each ``workers`` workers; stopped afterwards."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(server_process(gunicorn_command(workers), server_env(backend), cwd=SERVERS))
               for _ in range(count)]


@contextlib.contextmanager
def programs(count: int, backend: str | None,
             client_options: dict[str, Any] | None = None) -> Iterator[list[ServerProcess]]:
    """``count`` processes of ``python shared_server.py`` (minimcp's own HTTP server), stopped afterwards."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(server_process([sys.executable, str(SERVERS / "shared_server.py")],
                                                  server_env(backend, client_options))) for _ in range(count)]


class Stream:
    """The SSE messages of one streaming response, read by a thread of its own as they arrive."""

    def __init__(self, response: requests.Response) -> None:
        import queue

        self.response = response
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="test-sse-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines():
                if line.startswith(b"data:") and line[5:].strip():
                    self.messages.put(json.loads(line[5:].strip()))
        except (requests.RequestException, ValueError, OSError, AttributeError):
            pass  # closed by the test (urllib3 then reads from a released connection), or broken
        finally:
            self.messages.put(None)  # the stream ended

    def next(self, timeout: float = 30.0) -> dict[str, Any] | None:
        """The next message; ``None`` once the stream ended. Fails if nothing comes within ``timeout``."""
        import queue

        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing on the stream within {timeout}s") from None

    def close(self) -> None:
        self.response.close()
