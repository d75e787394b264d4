"""The client transports' own threads: how many they start, and that none outlives the client.

Each test runs a real server: a stdio subprocess, or minimcp's HTTP server on a loopback port.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from conftest import refusing_port, wait_for

from minimcp import Client, MCPError, StdioServerParameters
from minimcp.client.transports.router import MAX_SERVER_REQUESTS
from minimcp.server import MCPServer
from minimcp.types import ListRootsResult

SERVERS = Path(__file__).parent / "servers"
#: How long a callback waits for the test to let it answer (only a failing test waits that long).
WAIT = 30.0


def new_threads(name: str, before: set[threading.Thread]) -> list[threading.Thread]:
    """The live threads called ``name`` that were not among ``before`` (other tests' are not ours)."""
    return [thread for thread in threading.enumerate() if thread.name == name and thread not in before]


def test_a_server_flooding_stdio_with_requests_gets_client_busy_beyond_the_bound() -> None:
    """The server sends the bound's worth of ``roots/list`` requests plus eight at once; the
    callbacks hold their threads until the eight came back refused (-32603 "Client busy"), so the
    client never answers more at once than the bound, then every held request is answered."""
    release = threading.Event()
    answering_at_peak: list[int] = []
    before = set(threading.enumerate())

    def roots(context: Any) -> ListRootsResult:
        assert release.wait(WAIT), "the server never saw the refusals"
        return ListRootsResult(roots=[])

    def on_log(params: Any) -> None:  # "all refusals in": every answering thread is still held
        answering_at_peak.append(len(new_threads("minimcp-stdio-request", before)))
        release.set()

    server = StdioServerParameters(command=sys.executable, args=[str(SERVERS / "flooding_stdio_server.py")])
    with Client(server, mode="legacy", list_roots_callback=roots, logging_callback=on_log) as client:
        result = client.call_tool("flood", {"count": MAX_SERVER_REQUESTS + 8, "busy": 8})
    tally = json.loads(result.content[0].text)
    assert tally["answered"] == MAX_SERVER_REQUESTS
    assert [error["code"] for error in tally["errors"]] == [-32603] * 8
    assert all(error["message"].startswith("Client busy: ") for error in tally["errors"]), tally["errors"]
    assert answering_at_peak == [MAX_SERVER_REQUESTS]
    assert wait_for(lambda: not new_threads("minimcp-stdio-request", before))


def test_closing_an_http_client_ends_its_standalone_stream_thread(serve_http: Callable[..., str]) -> None:
    """A legacy client opens the standalone GET stream on a thread of its own; leaving the block
    returns only once that thread has ended (closing wakes its blocked read), a few times over."""
    url = serve_http(MCPServer("listening", log_level="WARNING"))
    for _ in range(3):
        before = set(threading.enumerate())
        with Client(url, mode="legacy") as client:
            client.send_ping()
            listener = new_threads("minimcp-http-listen", before)
            assert len(listener) == 1
        assert not listener[0].is_alive()


def test_auto_mode_raises_a_refused_connection_at_once() -> None:
    """Nothing listens: the ``server/discover`` probe's network error is the error, with its cause."""
    with refusing_port() as port, pytest.raises(MCPError) as failure:
        Client(f"http://127.0.0.1:{port}/mcp").__enter__()
    assert (failure.value.code, str(failure.value)) == (-32000, "Connection closed")
    assert isinstance(failure.value.__cause__, requests.ConnectionError)


class DroppingListener:
    """A loopback port that reads each request and closes its connection without an answer,
    noting the JSON-RPC method of every request it got."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # how often the accept loop looks whether to stop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="test-dropping-listener", daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/mcp"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(WAIT)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                head, body = data.split(b"\r\n\r\n", 1)
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length:")))
                while len(body) < length:
                    body += connection.recv(65536)
                self.methods.append(json.loads(body)["method"])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(WAIT)
        self._listener.close()


@pytest.fixture
def dropping_listener() -> Iterator[DroppingListener]:
    listener = DroppingListener()
    yield listener
    listener.close()


def test_auto_mode_does_not_try_the_handshake_after_a_network_error(dropping_listener: DroppingListener) -> None:
    """The probe's connection is dropped without an answer: as the official client does, that is
    raised at once; no ``initialize`` follows on the other protocol."""
    with pytest.raises(MCPError) as failure:
        Client(dropping_listener.url).__enter__()
    assert failure.value.code == -32000
    assert dropping_listener.methods == ["server/discover"]
