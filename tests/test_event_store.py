"""``event_store=``: resumable legacy SSE streams kept in the user's ``EventStore``, over real HTTP.

A tool closes its own SSE stream mid-call (``ctx.close_sse_stream()``), keeps reporting, and
returns; the client reconnects with ``Last-Event-ID`` and gets what it missed, from the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import requests

from conftest import LEGACY, legacy_handshake, request_message
from minimcp import Client
from minimcp.server import MCPServer, Server, ServerRequestContext
from minimcp.server.mcpserver import Context
from minimcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from minimcp.types import CallToolRequestParams, CallToolResult, JSONRPCMessage, JSONRPCResponse, TextContent


class ListStore(EventStore):
    """Every event in arrival order; ids are positions (what the official story's store does)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards events: tool threads store while a GET replays
        self.events: list[tuple[StreamId, JSONRPCMessage | None]] = []

    def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        with self._lock:
            self.events.append((stream_id, message))
            return str(len(self.events))

    def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        with self._lock:
            cursor = int(last_event_id) if last_event_id.isdigit() else 0
            if not 0 < cursor <= len(self.events):
                return None
            stream_id = self.events[cursor - 1][0]
            tail = [(str(i + 1), m) for i, (s, m) in enumerate(self.events) if i >= cursor and s == stream_id]
        for event_id, message in tail:
            if message is not None:
                send_callback(EventMessage(message, event_id))
        return stream_id


def _server() -> MCPServer[Any]:
    mcp: MCPServer[Any] = MCPServer("sse-polling")

    @mcp.tool()
    def long_operation(ctx: Context) -> str:
        """Report, close this call's stream, report again, answer."""
        ctx.report_progress(0.5, total=1.0, message="before-close")
        ctx.close_sse_stream()
        ctx.report_progress(1.0, total=1.0, message="after-close")
        return "resumed"

    return mcp


def _lowlevel() -> Server[Any]:
    def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        ctx.session.report_progress(0.5, total=1.0, message="before-close")
        ctx.close_sse_stream()
        ctx.session.report_progress(1.0, total=1.0, message="after-close")
        return CallToolResult(content=[TextContent(text="resumed")])

    return Server("sse-polling", on_call_tool=call_tool)


def test_the_client_resumes_from_the_store(serve_http: Callable[..., str]) -> None:
    for server in (_server(), _lowlevel()):
        store = ListStore()
        messages: list[str | None] = []
        with Client(serve_http(server, event_store=store, retry_interval=0), mode="legacy") as client:
            result = client.call_tool("long_operation", {},
                                       progress_callback=lambda progress, total, message: messages.append(message))
        assert result.content == [TextContent(text="resumed")]
        assert messages == ["before-close", "after-close"]
        answers = [message for _, message in store.events if isinstance(message, JSONRPCResponse)]
        assert [answer.result["content"] for answer in answers] == [[{"type": "text", "text": "resumed"}]]


def _sse_events(response: requests.Response) -> list[dict[str, str]]:
    events, current = [], {}
    for line in response.text.splitlines():
        if not line:
            if current:
                events.append(current)
            current = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            current[field] = value.strip()
    return events


def test_the_wire_carries_the_store_ids_and_a_get_replays_from_it(serve_http: Callable[..., str]) -> None:
    store = ListStore()
    url = serve_http(_server(), event_store=store, retry_interval=0)
    session = legacy_handshake(url, LEGACY)
    call = request_message("tools/call", {"name": "long_operation", "arguments": {}, "_meta": {"progressToken": 1}})
    first = _sse_events(session.post(call))
    assert [event["id"] for event in first] == ["1", "2", "3"]  # priming, progress, the close marker
    assert first[0]["data"] == "" and first[2]["data"] == ""
    resumed = requests.get(url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
                                         "MCP-Protocol-Version": LEGACY, "Last-Event-ID": first[-1]["id"]},
                           timeout=30)
    assert resumed.status_code == 200
    replayed = _sse_events(resumed)
    assert [event["id"] for event in replayed] == ["4", "5"]  # the second progress, then the answer
    assert '"after-close"' in replayed[0]["data"] and '"resumed"' in replayed[1]["data"]
    assert len(store.events) == 5


def test_an_unknown_or_foreign_last_event_id_is_refused(serve_http: Callable[..., str]) -> None:
    store = ListStore()
    url = serve_http(_server(), event_store=store, retry_interval=0)
    owner, other = legacy_handshake(url, LEGACY), legacy_handshake(url, LEGACY)
    owner.post(request_message("tools/call", {"name": "long_operation", "arguments": {}}))
    for session, last_event_id in ((owner, "99"), (other, "1")):
        refused = requests.get(url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
                                             "MCP-Protocol-Version": LEGACY, "Last-Event-ID": last_event_id},
                               timeout=30)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "Unknown or expired Last-Event-ID"


def test_a_failing_store_does_not_strand_the_call(serve_http: Callable[..., str]) -> None:
    class Broken(ListStore):
        def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
            if isinstance(message, JSONRPCResponse):
                raise OSError("the database went away")
            return super().store_event(stream_id, message)

    mcp: MCPServer[Any] = MCPServer("flaky-store")

    @mcp.tool()
    def slow(ctx: Context) -> str:
        ctx.report_progress(0.5, total=1.0, message="halfway")
        return "done"

    with Client(serve_http(mcp, event_store=Broken()), mode="legacy", read_timeout_seconds=10) as client:
        assert client.call_tool("slow", {}, progress_callback=lambda *_: None).content == [TextContent(text="done")]


def test_an_answer_sent_as_one_json_body_is_still_kept_in_the_store(serve_http: Callable[..., str]) -> None:
    """A call of a tool that can send nothing runs on the thread that received it and is answered
    as one JSON body; with a store, its answer is kept there all the same."""
    mcp: MCPServer[Any] = MCPServer("quiet-store")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    store = ListStore()
    session = legacy_handshake(serve_http(mcp, event_store=store, retry_interval=0), LEGACY)
    response = session.post(request_message("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"] == {"result": 5}
    answers = [message for _, message in store.events if isinstance(message, JSONRPCResponse)]
    assert [answer.result["structuredContent"] for answer in answers] == [{"result": 5}]
