"""A server that closes a kept-alive connection as a request arrives on it.

The server here is a raw socket server speaking just enough HTTP/1.1 and JSON-RPC for a legacy
``Client``: it answers every request on a connection with ``Connection: keep-alive`` and, when
told to, closes the connection instead of answering one method, which is exactly what a real
server's idle timeout does to a request that went out in the same instant. Whether that
connection had already carried an answer (reused) or was new decides whether a resend is safe.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
import requests
from raw_http_support import CountingListener

from minimcp import Client, MCPError
from minimcp.client.keepalive import KeepAliveRetryAdapter, http_session
from minimcp.client.streamable_http import streamable_http_client

LEGACY = "2025-11-25"


class DroppingServer(CountingListener):
    """Closes, without a byte of answer, the first ``drop_limit`` requests for ``drop_method`` on
    connections that have served ``drop_after`` answers already."""

    def __init__(self, drop_method: str, drop_after: int, drop_limit: int) -> None:
        self.drop_method = drop_method
        self.drop_after = drop_after
        self.drop_limit = drop_limit
        # Guarded by lock, as connections: one thread per accepted connection records.
        self.seen: list[tuple[int, str]] = []  # (connection number, JSON-RPC method or HTTP verb)
        self.dropped = 0
        super().__init__()

    def handle(self, conn: socket.socket, number: int) -> None:
        conn.settimeout(30)
        answered = 0
        buffer = b""
        with conn:
            while True:
                request = _read_request(conn, buffer)
                if request is None:
                    return
                verb, body, buffer = request
                method = json.loads(body)["method"] if body else verb
                with self.lock:
                    self.seen.append((number, method))
                    drop = method == self.drop_method and answered >= self.drop_after and self.dropped < self.drop_limit
                    if drop:
                        self.dropped += 1
                if drop:
                    return  # closes the socket without writing a byte
                conn.sendall(_answer(verb, body))
                answered += 1


def _read_request(conn: socket.socket, buffer: bytes) -> tuple[str, bytes, bytes] | None:
    """One request's verb and body, and the bytes after it; ``None`` when the client closed."""
    while b"\r\n\r\n" not in buffer:
        try:
            chunk = conn.recv(65536)
        except OSError:
            return None
        if not chunk:
            return None
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return lines[0].split(" ")[0], rest[:length], rest[length:]


def _answer(verb: str, body: bytes) -> bytes:
    if verb == "GET":  # no standalone stream here
        return b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
    if verb != "POST":
        return b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
    message = json.loads(body)
    if "id" not in message:
        return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
    result: dict[str, object] = {}
    if message["method"] == "initialize":
        result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "dropper", "version": "1"}}
    payload = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: keep-alive\r\n\r\n"
    return head.encode() + payload


@pytest.fixture
def dropping_server(request: pytest.FixtureRequest) -> Iterator[DroppingServer]:
    method, after, limit = request.param
    server = DroppingServer(drop_method=method, drop_after=after, drop_limit=limit)
    try:
        yield server
    finally:
        server.close()


# The handshake (initialize, notifications/initialized, the standalone GET) runs on one kept-alive
# connection, so by the time of the ping that connection has answered three requests.
REUSED_PING = pytest.mark.parametrize("dropping_server", [("ping", 1, 1)], indirect=True)


@pytest.mark.parametrize("dropping_server", [("none", 0, 0)], indirect=True)
def test_the_handshake_keeps_one_connection(dropping_server: DroppingServer) -> None:
    """Answers the client does not read (202 to a notification, 405 to the GET) are read to their
    end anyway, so their connection goes back to the pool instead of being closed."""
    with Client(dropping_server.url, mode="legacy") as client:
        client.send_ping()
    assert [method for _, method in dropping_server.seen] == [
        "initialize", "notifications/initialized", "GET", "ping"]
    assert dropping_server.connections == 1


@REUSED_PING
def test_a_plain_requests_session_fails_the_call(dropping_server: DroppingServer) -> None:
    """What the client did before it made its own session, and what ``requests`` does for a POST."""
    plain = requests.Session()
    with Client(streamable_http_client(dropping_server.url, http_client=plain), mode="legacy") as client:
        with pytest.raises(MCPError, match="Connection closed"):
            client.send_ping()
    assert dropping_server.dropped == 1
    assert [method for _, method in dropping_server.seen].count("ping") == 1


@REUSED_PING
def test_the_client_resends_once_on_a_new_connection(dropping_server: DroppingServer) -> None:
    with Client(dropping_server.url, mode="legacy") as client:
        client.send_ping()
        client.send_ping()  # and the pool goes on working afterwards
    pings = [number for number, method in dropping_server.seen if method == "ping"]
    assert dropping_server.dropped == 1
    assert len(pings) == 3
    assert pings[1] != pings[0], "the resend must go out on a new connection"


@REUSED_PING
def test_the_adapter_mounted_on_a_session_of_your_own(dropping_server: DroppingServer) -> None:
    own = requests.Session()
    own.mount("http://", KeepAliveRetryAdapter())
    with Client(streamable_http_client(dropping_server.url, http_client=own), mode="legacy") as client:
        client.send_ping()
    assert dropping_server.dropped == 1


@pytest.mark.parametrize("dropping_server", [("initialize", 0, 1)], indirect=True)
def test_a_drop_on_a_new_connection_is_not_resent(dropping_server: DroppingServer) -> None:
    """The server accepted that connection for this request and may have run it: no second copy."""
    with pytest.raises(MCPError, match="Connection closed"):
        with Client(dropping_server.url, mode="legacy"):
            pass
    assert [method for _, method in dropping_server.seen] == ["initialize"]


@pytest.mark.parametrize("dropping_server", [("ping", 0, 2)], indirect=True)
def test_a_second_drop_is_reported_not_resent_again(dropping_server: DroppingServer) -> None:
    """One resend only: a server that drops the new connection too is reported, not retried in a loop."""
    with http_session() as session:
        assert session.post(dropping_server.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"}).ok
        with pytest.raises(requests.exceptions.ConnectionError):
            session.post(dropping_server.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"})
    pings = [number for number, method in dropping_server.seen if method == "ping"]
    assert len(pings) == 2 and pings[0] != pings[1]
