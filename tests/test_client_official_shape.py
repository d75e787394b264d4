"""The client API in the official SDK's shape, as ported programs use it (issue 14, client tier).

``with stdio_client(params) as (read, write): with ClientSession(read, write) as session:`` over a
real subprocess, the same over Streamable HTTP on a loopback port, and the official spellings of
requests and notifications (models rather than method names).
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import minimcp
from minimcp import ClientSession, StdioServerParameters, types
from minimcp.client.context import ClientRequestContext
from minimcp.client.session_group import ClientSessionGroup
from minimcp.client.stdio import stdio_client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.shared.metadata_utils import get_display_name

SERVER = Path(__file__).parent / "servers" / "stdio_server.py"


def _demo() -> MCPServer:
    mcp = MCPServer("shape")

    @mcp.tool(title="Adder")
    def add(a: int, b: int) -> int:
        return a + b

    for index in range(3):
        mcp.resource(f"memo://{index}", name=f"memo{index}")(lambda: "memo")
    return mcp


def test_the_official_names_import_where_the_official_sdk_has_them() -> None:
    assert minimcp.ClientSession is ClientSession
    assert minimcp.ClientSessionGroup is ClientSessionGroup
    assert ClientRequestContext.__module__ == "minimcp.client.session"
    assert minimcp.Tool is types.Tool and minimcp.ServerCapabilities is types.ServerCapabilities


def test_stdio_client_yields_read_and_write_for_client_session() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    with stdio_client(params) as (read, write):
        with ClientSession(read, write) as session:
            assert session.initialize().server_info.name == "stdio-test"
            assert [tool.name for tool in session.list_tools().tools][:1] == ["echo"]
            result = session.call_tool("echo", {"text": "hi"})
            assert isinstance(result.content[0], types.TextContent) and result.content[0].text == "hi"


def test_streamable_http_client_yields_two_ends_and_accepts_request_models(
    serve_http: Callable[..., str],
) -> None:
    url = serve_http(_demo())
    with streamable_http_client(url) as streams:
        assert len(streams) == 2  # the official 2.3.0 arity
        read, write = streams
        with ClientSession(read, write) as session:
            session.initialize()
            tools = session.send_request(types.ListToolsRequest(), types.ListToolsResult)
            assert get_display_name(tools.tools[0]) == "Adder"
            session.send_notification(types.RootsListChangedNotification())
            page = session.list_resources(params=types.PaginatedRequestParams())
            assert sorted(str(r.uri) for r in page.resources) == ["memo://0", "memo://1", "memo://2"]


def test_session_refuses_ends_of_two_different_transports(serve_http: Callable[..., str]) -> None:
    url = serve_http(_demo())
    with pytest.raises(TypeError, match="two ends one transport yielded"):
        ClientSession(streamable_http_client(url), streamable_http_client(url))


def _big_sse_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """Answers every POST with one SSE event carrying a 4 KB server name."""
    body = json.loads(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
    result = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "x" * 4096, "version": "1"},
    }
    event = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result})
    start_response("200 OK", [("Content-Type", "text/event-stream")])
    return [f"data: {event}\n\n".encode()]


def test_max_sse_event_size_fails_an_oversized_event(serve_wsgi: Callable[[Any], str]) -> None:
    url = serve_wsgi(_big_sse_app) + "/mcp"
    with streamable_http_client(url, max_sse_event_size=1024) as (read, write):
        with ClientSession(read, write) as session:
            with pytest.raises(minimcp.MCPError, match="exceeded the 1024 byte limit"):
                session.initialize()
    with streamable_http_client(url) as (read, write):
        with ClientSession(read, write) as session:
            assert session.initialize().server_info.name == "x" * 4096


def test_a_server_that_stops_reading_stdin_cannot_hold_the_caller_past_its_timeout() -> None:
    """Writes go through the transport's writer thread: a full pipe blocks only that thread, the
    request still times out, and close() still ends the server."""
    import threading

    from minimcp import MCPError
    from minimcp.types import REQUEST_TIMEOUT

    transport = stdio_client(StdioServerParameters(command=sys.executable, args=["-c", "import time; time.sleep(60)"]))
    transport.connect(lambda message: None)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            transport.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 1_000_000}})
            transport.request({"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=0.5)
        except BaseException as failure:  # noqa: BLE001 - what ended the call is the assertion
            outcome.append(failure)
        finally:
            transport.close()

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(30)
    assert not caller.is_alive(), "a server that does not read its stdin held the caller"
    assert len(outcome) == 1 and isinstance(outcome[0], MCPError) and outcome[0].code == REQUEST_TIMEOUT


class Recording:
    """The JSON-RPC messages POSTed through it, in order."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.messages: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        if body:
            self.messages.append(json.loads(body))
        environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)


def test_the_official_meta_keywords_and_client_progress_reach_the_server(serve_wsgi: Callable[[Any], str]) -> None:
    """``meta=`` on ping, logging/setLevel and resource (un)subscription, and a client's progress on
    a legacy server's question (``send_progress_notification``), as the official client sends them."""
    app = _demo().wsgi_app()
    recording = Recording(app)
    meta = {"trace": "t-1"}
    try:
        with minimcp.Client(serve_wsgi(recording) + app.path, mode="legacy") as client:
            client.send_ping(meta=meta)
            client.set_logging_level("info", meta=meta)
            client.subscribe_resource("memo://0", meta=meta)
            client.unsubscribe_resource("memo://0", meta=meta)
            client.send_progress_notification("question-7", 0.5, 1.0, "half way")
            client.session.send_progress_notification(8, 1.0, meta=meta)
    finally:
        app.close()
    sent = {m["method"]: m.get("params") for m in recording.messages if m.get("method") != "notifications/progress"}
    assert sent["ping"] == {"_meta": meta}
    assert sent["logging/setLevel"] == {"level": "info", "_meta": meta}
    assert sent["resources/subscribe"] == sent["resources/unsubscribe"] == {"uri": "memo://0", "_meta": meta}
    assert [m["params"] for m in recording.messages if m.get("method") == "notifications/progress"] == [
        {"progressToken": "question-7", "progress": 0.5, "total": 1.0, "message": "half way"},
        {"progressToken": 8, "progress": 1.0, "_meta": meta},
    ]


def test_send_discover_and_adopt_negotiate_without_a_handshake(serve_http: Callable[..., str]) -> None:
    """The official pair: ``send_discover(version)`` returns the raw probe and adopts nothing;
    ``adopt(result)`` installs a result the caller holds, with no traffic of its own."""
    url = serve_http(_demo())
    with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        raw = session.send_discover("2026-07-28")
        assert "2026-07-28" in raw["supportedVersions"] and session.protocol_version is None
        discovered = types.DiscoverResult.model_validate(raw)
        session.adopt(discovered)
        assert (session.protocol_version, session.discover_result) == ("2026-07-28", discovered)
        assert session.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        elsewhere = types.DiscoverResult(supported_versions=["2099-01-01"], capabilities=types.ServerCapabilities())
        with pytest.raises(minimcp.MCPError) as none_shared:
            session.adopt(elsewhere)
        assert none_shared.value.code == -32022 and session.protocol_version == "2026-07-28"
    with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        initialized = session.initialize()
    with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        session.adopt(discovered)
        session.adopt(initialized)
        assert (session.protocol_version, session.initialize_result, session.discover_result) == (
            initialized.protocol_version, initialized, None)


def test_dispatch_input_request_routes_a_question_through_the_callbacks(serve_http: Callable[..., str]) -> None:
    def elicit(context: ClientRequestContext, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"copies": 2})

    url = serve_http(_demo())
    with streamable_http_client(url) as (read, write), \
            ClientSession(read, write, elicitation_callback=elicit) as session:
        session.initialize()
        context = ClientRequestContext(session=session, request_id="q1")
        question = types.ElicitRequest(params=types.ElicitRequestFormParams(
            message="How many?", requested_schema={"type": "object", "properties": {"copies": {"type": "integer"}}}))
        assert session.dispatch_input_request(context, question) == types.ElicitResult(action="accept",
                                                                                        content={"copies": 2})
        refused = session.dispatch_input_request(context, types.ListRootsRequest())
        assert refused == types.ErrorData(code=-32600, message="List roots not supported")


def test_send_request_takes_the_official_positions_and_keywords(serve_http: Callable[..., str]) -> None:
    """``send_request(request, result_type, request_read_timeout_seconds)``: ``result_type`` may come
    by keyword, and a third positional argument is the timeout (it used to be dropped)."""
    mcp = _demo()

    @mcp.tool()
    def slow() -> str:
        time.sleep(2)
        return "late"

    url = serve_http(mcp)
    with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        session.initialize()
        listed = session.send_request(types.ListToolsRequest(), result_type=types.ListToolsResult)
        assert {tool.name for tool in listed.tools} == {"add", "slow"}
        call = types.CallToolRequest(params=types.CallToolRequestParams(name="slow", arguments={}))
        with pytest.raises(minimcp.MCPError) as timed_out:
            session.send_request(call, types.CallToolResult, 0.3)
        assert timed_out.value.code == -32001
        with pytest.raises(TypeError, match="the third argument is a timeout in seconds"):
            session.send_request(call, types.CallToolResult, "soon")


def test_the_official_message_unions_have_the_official_members() -> None:
    """Measured on the installed ``mcp`` 2.3.0: the unions its top level names (for annotations)
    hold the same models here, by name, and ``SamplingRole`` is the role literal."""
    import typing

    import mcp

    def members(union: Any) -> list[Any]:
        return [arg.__name__ if isinstance(arg, type) else arg for arg in typing.get_args(union)]

    for name in ("ClientRequest", "ClientNotification", "ClientResult", "ServerRequest", "ServerResult",
                 "SamplingRole"):
        assert members(getattr(minimcp, name)) == members(getattr(mcp, name)), name
    assert minimcp.ClientRequest is types.ClientRequest and minimcp.Notification is types.Notification
    assert typing.get_args(minimcp.SamplingRole) == ("user", "assistant")
