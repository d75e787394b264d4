"""``CancelScope.cancel()`` ends a call whose answer's head has not come yet, and the server hears of it.

A quiet call answered with one JSON body keeps the client waiting for the head of that answer
until the call ends. Cancelling it shuts the request's connection at once; the call raises and the
scope catches it. The server learns of it as the era says: in legacy by ``notifications/cancelled``
(a disconnect is no cancellation there), in 2026-07-28 by the hang-up alone (no notification is
posted). Against the official SDK's server (``json_response=True``, a real subprocess) and minimcp's,
through a relay that records what crossed it.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import next_line, server_process, wait_for
from raw_http_support import CountingListener, pump

from minimcp import Client, MCPError
from minimcp.client.cancel import CancelScope
from minimcp.client.keepalive import http_session
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

SERVERS = Path(__file__).parent / "servers"
#: ``Client(mode=...)``: legacy, and auto, which lands on 2026-07-28 with both servers.
ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])
CANCEL_AFTER = 0.5


class Relay(CountingListener):
    """Forwards each connection to ``target``, recording what the client sent and every hang-up:
    a client closing its connection while a request on it is still unanswered."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.sent = bytearray()
        self.hangups = 0
        super().__init__()

    def handle(self, conn: socket.socket, number: int) -> None:
        outbound = socket.create_connection(self.target, timeout=60)
        counts = {"requests": 0, "answers": 0}
        threading.Thread(target=pump, args=(_Tap(outbound, self, counts, b"HTTP/1.1 ", "answers"), conn),
                         daemon=True).start()
        pump(_Tap(conn, self, counts, b" HTTP/1.1\r\n", "requests"), outbound)

    def seen(self, counts: dict[str, int], what: str, chunk: bytes, marker: bytes) -> None:
        with self.lock:
            if what == "requests":
                self.sent += chunk
                self.hangups += not chunk and counts["requests"] > counts["answers"]
            counts[what] += chunk.count(marker)

    def heard(self, text: str) -> bool:
        with self.lock:
            return text.encode() in self.sent


class _Tap:
    """One side of a relayed connection, telling the relay what it reads (``b""``: the peer closed)."""

    def __init__(self, sock: socket.socket, relay: Relay, counts: dict[str, int], marker: bytes, what: str) -> None:
        self.sock, self.relay, self.counts, self.marker, self.what = sock, relay, counts, marker, what

    def recv(self, size: int) -> bytes:
        chunk = self.sock.recv(size)
        self.relay.seen(self.counts, self.what, chunk, self.marker)
        return chunk

    def shutdown(self, how: int) -> None:
        self.sock.shutdown(how)


def relayed(url: str) -> tuple[str, Relay]:
    host_port = url.split("/")[2]
    relay = Relay(("127.0.0.1", int(host_port.split(":")[1])))
    return url.replace(host_port, f"127.0.0.1:{relay.port}"), relay


def cancel_soon(client: Client, name: str, arguments: dict[str, Any]) -> CancelScope:
    """Call ``name`` under a scope cancelled from another thread ``CANCEL_AFTER`` seconds in."""
    scope = CancelScope()
    timer = threading.Timer(CANCEL_AFTER, scope.cancel)
    timer.start()
    try:
        with scope:
            client.call_tool(name, arguments)
    finally:
        timer.cancel()
        timer.join(10)  # the cancelling thread has said what it says to the server
    assert not timer.is_alive()
    return scope


@pytest.fixture
def official() -> Iterator[Any]:
    with server_process([sys.executable, str(SERVERS / "official_json.py")]) as server:
        yield server


@ERAS
@pytest.mark.parametrize("session", ["own", "requests"])
def test_cancelling_a_call_the_official_server_answers_with_json(official: Any, mode: str, session: str) -> None:
    url, relay = relayed(official.base + "/mcp")
    try:
        target: Any = streamable_http_client(url, http_client=http_session()) if session == "requests" else url
        with Client(target, mode=mode) as client:
            scope = cancel_soon(client, "crunch", {"seconds": 8})
            assert scope.cancelled_caught
            # The server has not finished the call: it is still running, or it was cancelled.
            line, _ = next_line(official.lines, lambda text: text.startswith("crunch "), 30, "the call's start")
            assert line.strip() == "crunch started"
            if mode == "legacy":
                line, _ = next_line(official.lines, lambda text: text.startswith("crunch "), 30, "the call's end")
                assert line.strip() == "crunch cancelled"
                assert relay.heard("notifications/cancelled")
            else:
                assert wait_for(lambda: relay.hangups == 1)
                assert not relay.heard("notifications/cancelled")
            assert getattr(client.call_tool("crunch", {"seconds": 0}).content[0], "text", None) == "done"  # it carries on
    finally:
        relay.close()


def quiet_server(seen: dict[str, threading.Event]) -> MCPServer:
    mcp = MCPServer("cancelled")

    @mcp.tool()
    def crunch(seconds: float, ctx: Context) -> str:
        """Works quietly until cancelled or done."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not ctx.cancelled:
            time.sleep(0.02)
        seen["cancelled" if ctx.cancelled else "finished"].set()
        return "done"

    return mcp


@ERAS
def test_cancelling_a_call_minimcp_answers_with_json(serve_http: Callable[..., str], mode: str) -> None:
    seen = {"cancelled": threading.Event(), "finished": threading.Event()}
    url, relay = relayed(serve_http(quiet_server(seen)))
    try:
        with Client(url, mode=mode) as client:
            assert cancel_soon(client, "crunch", {"seconds": 8}).cancelled_caught
            assert seen["cancelled"].wait(10), "the server did not cancel the call"
            assert not seen["finished"].is_set()
            assert relay.heard("notifications/cancelled") == (mode == "legacy")
            assert wait_for(lambda: relay.hangups == 1)
    finally:
        relay.close()


@ERAS
def test_a_timed_out_call_is_cancelled_as_its_era_says(serve_http: Callable[..., str], mode: str) -> None:
    seen = {"cancelled": threading.Event(), "finished": threading.Event()}
    url, relay = relayed(serve_http(quiet_server(seen)))
    try:
        with Client(url, mode=mode, read_timeout_seconds=CANCEL_AFTER) as client:
            with pytest.raises(MCPError, match="timed out"):
                client.call_tool("crunch", {"seconds": 8})
            assert seen["cancelled"].wait(10), "the server did not cancel the call"
            assert relay.heard("notifications/cancelled") == (mode == "legacy")
    finally:
        relay.close()
