"""The official ``Connection`` API a handler reaches as ``ctx.session.connection``, and the
``ServerSession`` notifications that share its standalone channel, on a real legacy HTTP session
whose client holds the standalone GET stream open; and the per-request timeouts of both APIs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from conftest import legacy_handshake

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import MCPServer, Server, ServerRequestContext
from minimcp.server.mcpserver import Context
from minimcp.types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ListRootsRequest,
    ListRootsResult,
    LoggingMessageNotification,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    Root,
    SamplingMessage,
    TextContent,
    ToolListChangedNotification,
)

#: What the ``announce`` tool sends, by notification class (``ResourceUpdated`` twice: once per API).
ANNOUNCED = {ToolListChangedNotification: 1, PromptListChangedNotification: 2, ResourceListChangedNotification: 1,
             ResourceUpdatedNotification: 2, LoggingMessageNotification: 1}


def standalone_server() -> MCPServer:
    mcp = MCPServer("Standalone", back_channel_timeout=20)

    @mcp.tool()
    def announce(ctx: Context) -> str:
        connection = ctx.session.connection
        connection.send_tool_list_changed()
        connection.send_prompt_list_changed()
        connection.send_resource_list_changed()
        connection.send_resource_updated("note://today")
        connection.log("warning", "disk low", "storage")
        ctx.session.send_prompt_list_changed()
        ctx.session.send_resource_updated("note://today")
        return "sent"

    @mcp.tool()
    def roots(ctx: Context, timeout: float | None = None) -> str:
        connection = ctx.session.connection
        opts = None if timeout is None else {"timeout": timeout}
        raw = connection.send_raw_request("roots/list", None, opts)
        typed = connection.send_request(ListRootsRequest(method="roots/list"), opts=opts)
        connection.ping(opts=opts)
        assert isinstance(typed, ListRootsResult)
        return f"{raw['roots'][0]['uri']} {typed.roots[0].uri}"

    @mcp.tool()
    def roots_on_this_call(ctx: Context, timeout: float) -> str:
        result = ctx.session.send_request(ListRootsRequest(method="roots/list"), ListRootsResult,
                                          request_read_timeout_seconds=timeout, related_request_id=ctx.request_id)
        return str(result.roots[0].uri)

    return mcp


def _announced(client: Client, seen: list[Any], expected: dict[type, int]) -> bool:
    """Whether calling ``announce`` (again, within 10 s) brings each ``expected`` notification as
    often as named: the client opens its GET stream on its own thread after the handshake, and
    what is sent before it is open is dropped."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        del seen[:]
        assert client.call_tool("announce", {}).content[0].text == "sent"
        time.sleep(0.2)
        if all(sum(isinstance(m, kind) for m in seen) >= count for kind, count in expected.items()):
            return True
    return False


def test_the_standalone_channel_carries_every_notification(serve_http: Callable[..., str]) -> None:
    seen: list[Any] = []
    with Client(serve_http(standalone_server()), mode="legacy", message_handler=seen.append) as client:
        assert _announced(client, seen, ANNOUNCED), f"not every notification arrived: {seen}"
    updated = [m for m in seen if isinstance(m, ResourceUpdatedNotification)]
    assert {str(m.params.uri) for m in updated} == {"note://today"}
    (logged,) = [m for m in seen if isinstance(m, LoggingMessageNotification)]
    assert (logged.params.level, logged.params.data, logged.params.logger) == ("warning", "disk low", "storage")


def test_requests_on_the_standalone_channel_are_answered(serve_http: Callable[..., str]) -> None:
    seen: list[Any] = []

    def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work")])

    with Client(serve_http(standalone_server()), mode="legacy", message_handler=seen.append,
                list_roots_callback=list_roots) as client:
        assert _announced(client, seen, ANNOUNCED), f"not every notification arrived: {seen}"
        assert client.call_tool("roots", {}).content[0].text == "file:///work file:///work"


@pytest.mark.parametrize("tool", ["roots", "roots_on_this_call"])
def test_a_request_timeout_bounds_one_request_in_place_of_the_servers(serve_http: Callable[..., str],
                                                                      tool: str) -> None:
    """The official ``CallOptions`` ``timeout`` on the standalone channel, and ``ServerSession.send_request``'s
    ``request_read_timeout_seconds`` on the call's own stream: the client's answer comes after 2 s,
    the server's ``back_channel_timeout`` is 20 s, so only a request that gave up after its own 0.3 s
    fails. (On the call's own stream the client reads the failure once its callback has returned.)"""
    seen: list[Any] = []
    release = threading.Event()

    def slow_roots(context: ClientRequestContext) -> ListRootsResult:
        release.wait(2)
        return ListRootsResult(roots=[Root(uri="file:///late")])

    try:
        with Client(serve_http(standalone_server()), mode="legacy", message_handler=seen.append,
                    list_roots_callback=slow_roots) as client:
            assert _announced(client, seen, ANNOUNCED), f"not every notification arrived: {seen}"
            with pytest.raises(MCPError) as timed_out:
                client.call_tool(tool, {"timeout": 0.3})
            release.set()
    finally:
        release.set()
    assert (timed_out.value.code, str(timed_out.value)) == (-32001, "Request 'roots/list' timed out")


def test_a_timeout_that_is_not_a_positive_number_is_refused(serve_http: Callable[..., str]) -> None:
    mcp = MCPServer("Standalone")

    @mcp.tool()
    def ask(ctx: Context) -> str:
        try:
            ctx.session.connection.send_raw_request("roots/list", None, {"timeout": -1})
        except ValueError as refused:
            return str(refused)
        return "asked"

    with Client(serve_http(mcp), mode="legacy") as client:
        assert client.call_tool("ask", {}).content[0].text == \
            "opts['timeout'] must be a positive number of seconds, got -1"


def polling_server() -> MCPServer:
    mcp = MCPServer("Polling")

    @mcp.tool()
    def poll(ctx: Context) -> str:
        ctx.close_standalone_sse_stream()
        return "closed"

    @mcp.tool()
    def announce(ctx: Context) -> str:
        ctx.session.send_tool_list_changed()
        return "sent"

    return mcp


def low_level_polling_server() -> Server:
    def call_tool(ctx: ServerRequestContext[Any], params: Any) -> CallToolResult:
        ctx.close_standalone_sse_stream()
        return CallToolResult(content=[TextContent(type="text", text="closed")])

    return Server("Polling", on_call_tool=call_tool)


@pytest.mark.parametrize("tier", [polling_server, low_level_polling_server])
def test_close_standalone_sse_stream_ends_the_get_stream(serve_http: Callable[..., str],
                                                         tier: Callable[[], Any]) -> None:
    """The official ``ctx.close_standalone_sse_stream()`` on either tier: the open GET stream ends at
    once (not at its next keep-alive), and the session takes a new one."""
    session = legacy_handshake(serve_http(tier()))
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
               "MCP-Protocol-Version": session.protocol_version}
    stream = requests.get(session.url, headers=headers, stream=True, timeout=10)
    assert stream.status_code == 200
    ended = threading.Event()

    def read_to_the_end() -> None:
        for _ in stream.iter_content(None):
            pass
        ended.set()

    threading.Thread(target=read_to_the_end, daemon=True).start()
    assert session.call_tool("poll")["content"][0]["text"] == "closed"
    assert ended.wait(5)
    again = requests.get(session.url, headers=headers, stream=True, timeout=10)
    assert again.status_code == 200
    again.close()


def test_a_client_reopens_its_standalone_stream_after_the_server_closed_it(serve_http: Callable[..., str]) -> None:
    seen: list[Any] = []
    url = serve_http(polling_server())
    with Client(url, mode="legacy", message_handler=seen.append) as client:
        assert _announced(client, seen, {ToolListChangedNotification: 1})  # the stream is open
        assert client.call_tool("poll", {}).content[0].text == "closed"
        assert _announced(client, seen, {ToolListChangedNotification: 1})  # and open again


def sampling_with_progress_server() -> MCPServer:
    mcp = MCPServer("Progress")

    @mcp.tool()
    def sample(ctx: Context) -> str:
        heard: list[tuple[float, float | None, str | None]] = []
        request = CreateMessageRequest(params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))], max_tokens=5))
        result = ctx.session.send_request(request, CreateMessageResult, progress_callback=lambda *p: heard.append(p),
                                          related_request_id=ctx.request_id)
        return f"{result.content.text} {heard}"

    return mcp


@pytest.mark.parametrize("where", ["memory", "http"])
def test_send_request_progress_callback_hears_the_clients_progress(serve_http: Callable[..., str], where: str) -> None:
    """The official ``ServerSession.send_request(..., progress_callback=)``: the question carries a
    ``progressToken``, and what the client reports against it reaches the callback before the answer."""
    def sample(context: ClientRequestContext, params: Any) -> CreateMessageResult:
        token = (context.meta or {})["progressToken"]
        context.session.send_progress_notification(token, 0.5, 1.0, "half way")
        context.session.send_progress_notification("not-a-token-of-the-servers", 0.9)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="hello"), model="m")

    mcp = sampling_with_progress_server()
    with Client(mcp if where == "memory" else serve_http(mcp), mode="legacy", sampling_callback=sample) as client:
        assert client.call_tool("sample", {}).content[0].text == "hello [(0.5, 1.0, 'half way')]"
