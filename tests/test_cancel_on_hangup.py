"""A 2026-07-28 client cancels a call by hanging up, and the server notices while the call is quiet.

A call that reports nothing writes nothing until it ends, so a failed write cannot reveal the
client's departure: the server watches the connection instead (``minimcp.httpd.hangups``), on its
own HTTP server and under gunicorn (minimcp's worker class and gthread). The client here is a raw
socket that sends one ``tools/call`` and closes, as the TypeScript SDK's client does when its call
is aborted. A legacy disconnect is no cancellation (the client sends ``notifications/cancelled``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from cluster_support import SERVERS, WORKER, server_env
from conftest import (
    LEGACY,

    legacy_handshake,
    modern_headers,
    modern_params,
    modern_rpc,
    server_process,
    wait_for,
)

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

#: When the raw client hangs up, after sending its call.
HANG_UP_AFTER = 0.4


def send_and_hang_up(url: str, message: dict[str, Any], headers: dict[str, str]) -> None:
    """POST ``message`` on a socket of its own, read nothing, and close it ``HANG_UP_AFTER`` seconds later."""
    host_port, _, path = url.removeprefix("http://").partition("/")
    host, _, port = host_port.partition(":")
    body = json.dumps(message).encode()
    head = [f"POST /{path} HTTP/1.1", f"Host: {host_port}", "Content-Type: application/json",
            "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}",
            *(f"{name}: {value}" for name, value in headers.items()), "", ""]
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall("\r\n".join(head).encode() + body)
        time.sleep(HANG_UP_AFTER)


def modern_call(name: str, arguments: dict[str, Any], id: int = 1) -> tuple[dict[str, Any], dict[str, str]]:
    params = {"name": name, "arguments": arguments}
    return ({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": modern_params(params)},
            modern_headers("tools/call", params))


def quiet_server(seen: dict[str, threading.Event], mcp: MCPServer | None = None) -> MCPServer:
    """``mcp`` (a new server by default) with a tool that works quietly, telling ``seen`` how it went."""
    mcp = MCPServer("hangups") if mcp is None else mcp

    @mcp.tool()
    def crunch(seconds: float, ctx: Context) -> str:
        """Works quietly (no progress, no log) until cancelled or done."""
        seen["started"].set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not ctx.cancelled:
            time.sleep(0.02)
        if ctx.cancelled:
            seen["cancelled"].set()
            return "cancelled"
        seen["finished"].set()
        return "done"

    return mcp


@pytest.fixture
def seen() -> dict[str, threading.Event]:
    return {name: threading.Event() for name in ("started", "cancelled", "finished")}


@pytest.mark.parametrize("json_response", [False, True])
def test_a_quiet_modern_call_is_cancelled_when_its_client_hangs_up(
        serve_http: Callable[..., str], seen: dict[str, threading.Event], json_response: bool) -> None:
    url = serve_http(quiet_server(seen), json_response=json_response)
    send_and_hang_up(url, *modern_call("crunch", {"seconds": 20}))
    assert seen["started"].is_set()
    assert seen["cancelled"].wait(5), "the call ran on after its client hung up"
    assert not seen["finished"].is_set()
    # The server serves on, and a call whose client stays is not cancelled.
    assert modern_rpc(url, "tools/call", {"name": "crunch", "arguments": {"seconds": 0.6}})["result"][
        "structuredContent"] == {"result": "done"}


def test_a_legacy_disconnect_is_no_cancellation(serve_http: Callable[..., str],
                                                 seen: dict[str, threading.Event]) -> None:
    url = serve_http(quiet_server(seen))
    session = legacy_handshake(url)
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "crunch", "arguments": {"seconds": 1.5}}}
    send_and_hang_up(url, message, {"Mcp-Session-Id": session.session_id, "MCP-Protocol-Version": LEGACY})
    assert seen["finished"].wait(10) and not seen["cancelled"].is_set()


@pytest.mark.parametrize("worker", [WORKER, "gthread"])
def test_under_gunicorn_a_quiet_modern_call_is_cancelled_when_its_client_hangs_up(worker: str) -> None:
    import sys

    command = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", worker, "--threads", "4", "--no-control-socket",
               "--graceful-timeout", "2", "-b", "127.0.0.1:0", "shared_server:app"]
    with server_process(command, server_env(None), cwd=SERVERS) as server:
        url = server.base + "/mcp"

        def cancelled() -> int:
            answer = modern_rpc(url, "tools/call", {"name": "cancelled_calls", "arguments": {}})
            return int(answer["result"]["structuredContent"]["result"])

        before = cancelled()
        send_and_hang_up(url, *modern_call("hang", {"seconds": 30}))
        assert wait_for(lambda: cancelled() == before + 1, 5), "the call ran on after its client hung up"



def test_the_watch_sees_a_close_behind_unread_bytes_forgets_what_is_unwatched_and_ends_when_idle() -> None:
    from minimcp.httpd.hangups import Hangups

    hangups = Hangups(interval=0.05, idle=0.3, thread_name="test-hangups")
    (server_end, client_end), (kept, kept_peer) = socket.socketpair(), socket.socketpair()
    heard, not_heard = threading.Event(), threading.Event()
    hangups.watch(server_end, heard.set)
    unwatch = hangups.watch(kept, not_heard.set)
    client_end.sendall(b"POST /mcp HTTP/1.1\r\n")  # a next request's bytes, left unread
    unwatch()
    client_end.close()
    kept_peer.close()
    assert heard.wait(5), "a peer that closed behind unread bytes went unnoticed"
    assert not not_heard.is_set()
    assert wait_for(lambda: "test-hangups" not in {t.name for t in threading.enumerate()}, 5), "the thread stayed"
    server_end.close()
    kept.close()


def test_a_flask_sites_quiet_modern_call_is_cancelled_when_its_client_hangs_up(
        serve_wsgi: Callable[[Any], str], seen: dict[str, threading.Event]) -> None:
    """The endpoint of a Flask site, behind the site's own view, watches its client as minimcp's own does."""
    from flask import Flask

    from minimcp.flask import MCP

    app = Flask("site")
    quiet_server(seen, MCP(app, login_required=False))
    url = serve_wsgi(app) + "/mcp"
    send_and_hang_up(url, *modern_call("crunch", {"seconds": 20}))
    assert seen["cancelled"].wait(5), "the call ran on after its client hung up"
    assert not seen["finished"].is_set()
