"""Subscriptions end to end: ``client.listen()`` against ``MCPServer`` and a low-level ``Server``
with a ``ListenHandler``, over a real loopback HTTP server, a stdio subprocess and in memory, and
the bus reaching legacy clients too.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from minimcp import Client, MCPError, StdioServerParameters
from minimcp.client.subscriptions import (
    ListenNotSupportedError,
    ResourceUpdated,
    Subscription,
    SubscriptionLost,
    ToolsListChanged,
)
from minimcp.server import MCPServer
from minimcp.httpd import WSGIServer
from minimcp.server.mcpserver import Context
from minimcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent
from minimcp.types import INTERNAL_ERROR, METHOD_NOT_FOUND, ResourceUpdatedNotification, TextContent

sys.path.insert(0, str(Path(__file__).parent / "servers"))
from notebook_server import lowlevel_notebook, notebook  # noqa: E402

SERVER_SCRIPT = str(Path(__file__).parent / "servers" / "notebook_server.py")
WAIT = 10.0

BUILDERS: dict[str, Callable[[], Any]] = {"mcpserver": notebook, "lowlevel": lowlevel_notebook}


def _next(sub: Subscription) -> ServerEvent:
    """The next event, read on a helper thread so that a missing event fails the test instead of hanging it."""
    box: list[Any] = []

    def read() -> None:
        try:
            box.append(next(sub, None))
        except Exception as ended:  # handed to the test's thread below
            box.append(ended)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(WAIT)
    assert box, f"no event within {WAIT}s"
    if isinstance(box[0], Exception):
        raise box[0]
    return box[0]


def _listen_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "minimcp-listen"]


def _notebook_story(client: Client) -> None:
    """The official subscriptions story: exact-URI filtering, a runtime tool, and the session living on."""
    assert "search" not in {tool.name for tool in client.list_tools().tools}
    with client.listen(tools_list_changed=True, resource_subscriptions=["note://todo"]) as sub:
        assert sub.honored.tools_list_changed is True
        assert sub.honored.resource_subscriptions == ["note://todo"]
        assert str(sub.subscription_id).startswith("listen-")
        client.call_tool("edit_note", {"name": "journal", "text": "day two"})
        client.call_tool("edit_note", {"name": "todo", "text": "water plants"})
        assert _next(sub) == ResourceUpdated(uri="note://todo")  # the journal edit was never delivered
        client.call_tool("enable_search", {})
        assert _next(sub) == ToolsListChanged()
    assert not _listen_threads()
    assert "search" in {tool.name for tool in client.list_tools().tools}
    assert client.call_tool("edit_note", {"name": "todo", "text": "again"}).content == [TextContent(text="saved")]


@pytest.mark.parametrize("kind", BUILDERS)
def test_the_story_over_http(kind: str, serve_http: Callable[..., str]) -> None:
    with Client(serve_http(BUILDERS[kind]())) as client:
        _notebook_story(client)


@pytest.mark.parametrize("kind", BUILDERS)
def test_the_story_over_stdio(kind: str) -> None:
    args = [SERVER_SCRIPT, "lowlevel"] if kind == "lowlevel" else [SERVER_SCRIPT]
    with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
        _notebook_story(client)


@pytest.mark.parametrize("kind", BUILDERS)
def test_the_story_in_memory(kind: str) -> None:
    with Client(BUILDERS[kind]()) as client:
        _notebook_story(client)


def test_anext_reads_a_subscription_as_ported_code_calls_it() -> None:
    """``await anext(sub)`` with the await dropped is ``anext(sub)``: it returns the event itself."""
    with Client(notebook()) as client, client.listen(resource_subscriptions=["note://todo"]) as sub:
        client.call_tool("edit_note", {"name": "todo", "text": "x"})
        assert anext(sub) == ResourceUpdated(uri="note://todo")


def test_a_bus_shared_by_two_servers_reaches_the_listens_of_both(serve_http: Callable[..., str]) -> None:
    """What a bus over a pub/sub backend does for replicas: an edit on one reaches a listen on the other."""
    bus = InMemorySubscriptionBus()
    first, second = serve_http(notebook(bus)), serve_http(notebook(bus))
    with Client(first) as watching, Client(second) as editing:
        with watching.listen(resource_subscriptions=["note://todo"]) as sub:
            editing.call_tool("edit_note", {"name": "todo", "text": "from the other replica"})
            assert _next(sub) == ResourceUpdated(uri="note://todo")


def test_a_custom_bus_carries_what_tools_publish(serve_http: Callable[..., str]) -> None:
    class Recording(InMemorySubscriptionBus):
        def __init__(self) -> None:
            super().__init__()
            self.published: list[ServerEvent] = []

        def publish(self, event: ServerEvent) -> None:
            self.published.append(event)
            super().publish(event)

    bus = Recording()
    with Client(serve_http(notebook(bus))) as client, client.listen(tools_list_changed=True) as sub:
        client.call_tool("enable_search", {})
        assert _next(sub) == ToolsListChanged()
    assert bus.published == [ToolsListChanged()]


def test_leaving_the_block_ends_the_stream_on_the_server() -> None:
    """The server drops the listen as soon as the block is left, and the client carries on."""
    server = notebook()
    with Client(server) as client:
        with client.listen(tools_list_changed=True):
            assert len(server.dispatcher.listens) == 1
        assert len(server.dispatcher.listens) == 0
        assert not _listen_threads()


def test_a_graceful_close_ends_the_loop_after_the_events_before_it(serve_http: Callable[..., str]) -> None:
    server = notebook()
    with Client(serve_http(server)) as client, client.listen(resource_subscriptions=["note://todo"]) as sub:
        client.call_tool("edit_note", {"name": "todo", "text": "last words"})
        server.dispatcher.listens.close()  # what shutting the server down does
        events: list[ServerEvent] = []
        reader = threading.Thread(target=lambda: events.extend(sub), daemon=True)
        reader.start()
        reader.join(WAIT)
        assert not reader.is_alive(), "the loop did not end at the graceful close"
        assert events == [ResourceUpdated(uri="note://todo")]


def test_closing_the_client_ends_an_iteration_waiting_on_another_thread() -> None:
    outcome: list[BaseException | None] = []
    client = Client(StdioServerParameters(command=sys.executable, args=[SERVER_SCRIPT]))
    client.__enter__()
    listening = client.listen(tools_list_changed=True)
    sub = listening.__enter__()

    def iterate() -> None:
        try:
            next(sub)
            outcome.append(None)
        except BaseException as ended:  # noqa: BLE001 - what ended the wait is the assertion
            outcome.append(ended)

    reader = threading.Thread(target=iterate, daemon=True)
    reader.start()
    client.__exit__(None, None, None)
    reader.join(WAIT)
    listening.__exit__(None, None, None)
    assert len(outcome) == 1 and isinstance(outcome[0], SubscriptionLost)
    assert not _listen_threads()


def test_a_dropped_stream_raises_subscription_lost() -> None:
    server = notebook()
    httpd = WSGIServer(server.wsgi_app(), "127.0.0.1", 0)
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    with Client(f"http://127.0.0.1:{httpd.port}/mcp") as client, client.listen(tools_list_changed=True) as sub:
        httpd.shutdown(5)  # the connection goes away without the server's final result
        serving.join(WAIT)
        with pytest.raises(SubscriptionLost):
            _next(sub)


def test_a_refused_listen_raises_on_entering(serve_http: Callable[..., str]) -> None:
    with Client(serve_http(lowlevel_notebook(max_subscriptions=0))) as client:
        with pytest.raises(MCPError) as refused:
            with client.listen(tools_list_changed=True):
                pass
    assert refused.value.code == INTERNAL_ERROR
    assert not _listen_threads()


def test_subscriptions_false_leaves_listen_unserved_but_notify_keeps_working(serve_http: Callable[..., str]) -> None:
    mcp: MCPServer[Any] = MCPServer("quiet", subscriptions=False)

    @mcp.tool()
    def change(ctx: Context) -> str:
        ctx.notify_tools_changed()
        return "changed"

    with Client(serve_http(mcp)) as client:
        assert client.server_capabilities is not None and client.server_capabilities.tools is not None
        assert not client.server_capabilities.tools.list_changed
        with pytest.raises(MCPError) as refused, client.listen(tools_list_changed=True):
            pass
        assert refused.value.code == METHOD_NOT_FOUND
        assert client.call_tool("change", {}).content == [TextContent(text="changed")]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_legacy_clients_hear_the_bus_and_cannot_listen(transport: str, serve_http: Callable[..., str]) -> None:
    """One publish reaches both eras: a legacy session subscribed to the URI gets the notification."""
    heard: list[str] = []
    got = threading.Event()

    def handler(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.append(message.params.uri)
            got.set()

    target: Any = serve_http(notebook()) if transport == "http" else StdioServerParameters(
        command=sys.executable, args=[SERVER_SCRIPT])
    with Client(target, mode="legacy", message_handler=handler) as client:
        with pytest.raises(ListenNotSupportedError, match="2026-07-28"), client.listen(tools_list_changed=True):
            pass
        client.subscribe_resource("note://todo")
        client.call_tool("edit_note", {"name": "journal", "text": "unsubscribed"})
        client.call_tool("edit_note", {"name": "todo", "text": "subscribed"})
        assert got.wait(WAIT)
        assert heard == ["note://todo"]


def test_resource_subscriptions_must_be_a_list() -> None:
    with Client(notebook()) as client, pytest.raises(TypeError, match="list of URIs"):
        with client.listen(resource_subscriptions="note://todo"):
            pass


@pytest.fixture(autouse=True)
def _no_listen_thread_left() -> Iterator[None]:
    yield
    for thread in _listen_threads():
        thread.join(WAIT)
    assert not _listen_threads()


def test_a_stream_whose_client_stopped_reading_ends_at_its_backlog(serve_http: Callable[..., str]) -> None:
    """A listen nobody reads must not grow without bound: past ``max_buffered_events`` it is ended."""
    bus = InMemorySubscriptionBus()
    server = lowlevel_notebook(bus, max_buffered_events=8)
    port = int(serve_http(server).split(":")[2].split("/")[0])
    body = json.dumps({"jsonrpc": "2.0", "id": "idle", "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": ["note://todo"]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    with socket.socket() as idle:
        idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        idle.connect(("127.0.0.1", port))
        idle.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                     b"Mcp-Method: subscriptions/listen\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        deadline = time.monotonic() + WAIT
        while len(server.dispatcher.listens) == 0:
            assert time.monotonic() < deadline, "the listen never opened"
            time.sleep(0.01)
        for _ in range(200_000):  # bounded: far more than the socket buffers and the backlog hold
            bus.publish(ResourceUpdated(uri="note://todo"))
            if len(server.dispatcher.listens) == 0 or time.monotonic() > deadline + 20:
                break
        assert len(server.dispatcher.listens) == 0


@pytest.mark.parametrize("ending", ["cancelled", "client gone", "graceful close"])
def test_an_ended_listen_leaves_no_call_in_flight(ending: str) -> None:
    """A listen has no worker whose ``finally`` forgets it: its end must clear the stream's table of
    calls in flight, or every listen a long-lived stdio client cancels stays there until it exits."""
    from conftest import modern_params
    from minimcp.server.lowlevel.outbox import QueueOutbox
    from minimcp.server.core.peer import Peer

    server = notebook()
    peer = Peer(server, "test")
    for n in range(3):
        listen_id = f"listen-{n}"
        message = {"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
                   "params": modern_params({"notifications": {"toolsListChanged": True}})}
        outbox, answer = peer.request(message, QueueOutbox)
        assert answer is None and peer.connection.channel(listen_id) is outbox
        if ending == "cancelled":
            peer.notification({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": listen_id}})
        elif ending == "client gone":
            peer.abandon(listen_id)
        else:
            server.dispatcher.listens.close()
        assert peer.connection.channel(listen_id) is None
    assert not peer.connection.working
    peer.close()
