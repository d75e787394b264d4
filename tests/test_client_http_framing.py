"""The client's own HTTP reader against every framing of an answer a server may choose.

minimcp's servers answer one way (``Content-Length``, or chunked SSE); other servers and proxies
answer with an interim ``100 Continue``, chunk extensions and trailers, duplicate headers, or a
body that ends with the connection. A raw server on a loopback socket speaks legacy MCP in the
framing each test names and counts the connections it was given, since reuse is what the reader's
framing decides.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from raw_http_support import CountingListener

from minimcp import Client

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}
CALLS = 3


def _chunked(body: bytes) -> bytes:
    """``body`` in three chunks, one with an extension, then a last chunk with a trailer."""
    third = max(len(body) // 3, 1)
    pieces = [body[:third], body[third:2 * third], body[2 * third:]]
    out = b"".join(f"{len(p):x}{';note=1' if i == 1 else ''}\r\n".encode() + p + b"\r\n"
                   for i, p in enumerate(pieces) if p)
    return out + b"0\r\nX-Trailer: done\r\n\r\n"


class RawServer(CountingListener):
    """Legacy MCP over hand-written HTTP/1.1: each answer framed as ``framing`` says."""

    def __init__(self, framing: str) -> None:
        self.framing = framing
        self.called: list[str] = []  # guarded by lock: connection threads write it, the test reads it
        super().__init__()

    def handle(self, conn: socket.socket, number: int) -> None:
        conn.settimeout(30)
        reader = conn.makefile("rb")
        try:
            while True:
                request_line = reader.readline()
                if not request_line:
                    return
                headers: dict[str, str] = {}
                while (line := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length", "0")))
                if not self._answer(conn, request_line.split()[0].decode(), body):
                    return
        except OSError:
            return
        finally:
            reader.close()
            conn.close()

    def _answer(self, conn: socket.socket, verb: str, body: bytes) -> bool:
        """Write one answer; whether the connection stays open."""
        if verb != "POST":
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return True
        message = json.loads(body)
        if "id" not in message:
            conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            return True
        method = message["method"]
        with self.lock:
            self.called.append(method)
        if method == "initialize":
            result: dict[str, Any] = INITIALIZE
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": message["params"]["arguments"]["text"]}]}
        else:
            result = {}
        payload = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        head = "HTTP/1.1 200 OK\r\nMcp-Session-Id: raw-1\r\n"
        if self.framing == "sse":
            event = b"event: message\r\ndata: " + payload + b"\r\n\r\n"
            conn.sendall(f"{head}Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                         + _chunked(event))
            return True
        if self.framing == "chunked":
            conn.sendall(f"{head}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                         + _chunked(payload))
            return True
        if self.framing == "until-close":
            conn.sendall(f"{head}Content-Type: application/json\r\nConnection: close\r\n\r\n".encode() + payload)
            return False
        interim = "HTTP/1.1 100 Continue\r\n\r\n" if self.framing == "interim" else ""
        duplicate = "X-Seen: one\r\nX-Seen: two\r\n" if self.framing == "interim" else ""
        conn.sendall(f"{interim}{head}{duplicate}Content-Type: application/json\r\nContent-Length: {len(payload)}"
                     "\r\n\r\n".encode() + payload)
        return True


@pytest.fixture
def raw_server(request: pytest.FixtureRequest) -> Iterator[RawServer]:
    server = RawServer(request.param)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("raw_server", ["length", "interim", "chunked", "sse"], indirect=True)
def test_an_answer_read_to_its_end_leaves_its_connection_for_the_next_call(raw_server: RawServer) -> None:
    with Client(raw_server.url, mode="legacy") as client:
        for i in range(CALLS):
            assert client.call_tool("echo", {"text": f"hi {i}"}).content[0].text == f"hi {i}"
    assert raw_server.called.count("tools/call") == CALLS
    assert raw_server.connections == 1


@pytest.mark.parametrize("raw_server", ["until-close"], indirect=True)
def test_an_answer_that_ends_with_its_connection_is_read_whole_and_the_next_call_connects_again(
        raw_server: RawServer) -> None:
    with Client(raw_server.url, mode="legacy") as client:
        for i in range(CALLS):
            assert client.call_tool("echo", {"text": f"hi {i}"}).content[0].text == f"hi {i}"
    answered = len(raw_server.called)
    assert raw_server.connections >= answered  # one connection per answer, at least
