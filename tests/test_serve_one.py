"""The drivers beneath ``Server.run()`` (``minimcp.server.runner``) and the hand-built ``Connection``
(``minimcp.server.connection``), as the official serve_one story composes them: one request answered
as a raw result dict, and a stream served by a loop the program builds itself (a real subprocess)."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import LEGACY, MODES, ROOT

import minimcp.types as types
from minimcp import Client, MCPError, StdioServerParameters
from minimcp.server.connection import Connection
from minimcp.server.context import CallNext, HandlerResult, ServerRequestContext
from minimcp.server.lowlevel import Server
from minimcp.server.runner import serve_one
from minimcp.shared.transport_context import TransportContext
from minimcp.types.version import LATEST_MODERN_VERSION

LOOP_SERVER = textwrap.dedent(
    '''
    import contextlib

    import minimcp.types as types
    from minimcp.server.connection import Connection
    from minimcp.server.lowlevel import Server
    from minimcp.server.runner import serve_connection
    from minimcp.server.stdio import stdio_server
    from minimcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher


    @contextlib.contextmanager
    def lifespan(server):
        yield {"unit": "apples"}


    def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="add", input_schema={"type": "object"})])


    def call_tool(ctx, params):
        total = params.arguments["a"] + params.arguments["b"]
        text = f"{total} {ctx.lifespan_context['unit']} at {ctx.protocol_version}"
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"result": total})


    def main():
        server = Server("loop", lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool)
        with server.lifespan(server) as lifespan_state:
            with stdio_server() as (read_stream, write_stream):
                dispatcher = JSONRPCDispatcher(read_stream, write_stream, inline_methods=frozenset({"initialize"}))
                connection = Connection.for_loop(dispatcher)
                serve_connection(server, dispatcher, connection=connection, lifespan_state=lifespan_state)


    if __name__ == "__main__":
        main()
    '''
)


@dataclass
class OneExchange:
    """The per-request dispatch context a custom entry supplies (the story's ``SingleExchangeContext``)."""

    request_id: int | str | None
    transport: TransportContext = field(default_factory=lambda: TransportContext(kind="custom",
                                                                                 can_send_request=False))
    sent: list[tuple[str, Any]] = field(default_factory=list)

    def notify(self, method: str, params: Any, opts: Any = None) -> None:
        self.sent.append((method, params))


def envelope(capabilities: Any = None, client_info: Any = None) -> dict[str, Any]:
    return {types.PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION,
            types.CLIENT_INFO_META_KEY: client_info or {"name": "probe", "version": "0"},
            types.CLIENT_CAPABILITIES_META_KEY: {} if capabilities is None else capabilities}


def build_server(seen: list[str]) -> Server[Any]:
    @contextlib.contextmanager
    def lifespan(server: Server[Any]) -> Iterator[dict[str, str]]:
        yield {"unit": "server's own"}

    def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="add", input_schema={"type": "object"})])

    def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if "a" not in args:
            raise MCPError(types.INVALID_PARAMS, "a is required")
        ctx.session.report_progress(1, 2, "half way")
        ctx.session.connection.exit_stack.callback(seen.append, "cleaned up")
        total = args["a"] + args["b"]
        text = f"{total} {ctx.lifespan_context['unit']} for {ctx.session.client_info.name}"
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"result": total})

    def record(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        seen.append(ctx.method)
        return call_next(ctx)

    server: Server[Any] = Server("one", lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(record)
    return server


def test_serve_one_answers_one_request_with_its_raw_result() -> None:
    seen: list[str] = []
    server = build_server(seen)
    exchange = OneExchange(request_id=1)
    params = {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {**envelope(), "progressToken": "t"}}
    meta = params["_meta"]
    connection = Connection.from_envelope(meta[types.PROTOCOL_VERSION_META_KEY], meta[types.CLIENT_INFO_META_KEY],
                                          meta[types.CLIENT_CAPABILITIES_META_KEY])
    raw = serve_one(server, exchange, "tools/call", params, connection=connection,
                    lifespan_state={"unit": "apples"})
    assert raw["structuredContent"] == {"result": 5}
    assert raw["content"] == [{"type": "text", "text": "5 apples for probe"}]
    assert raw["resultType"] == "complete"
    assert exchange.sent == [("notifications/progress",
                              {"progressToken": "t", "progress": 1, "total": 2, "message": "half way"})]
    assert seen == ["tools/call", "cleaned up"]  # through the middleware; the connection's cleanups ran


def test_serve_one_raises_the_error_the_client_would_get() -> None:
    server = build_server([])
    connection = Connection.from_envelope(LATEST_MODERN_VERSION, None, {})
    with pytest.raises(MCPError) as refused:
        serve_one(server, OneExchange(request_id="x"), "tools/call", {"name": "add", "arguments": {},
                                                                      "_meta": envelope()},
                  connection=connection, lifespan_state={})
    assert (refused.value.code, refused.value.message) == (types.INVALID_PARAMS, "a is required")
    with pytest.raises(MCPError) as unknown:
        serve_one(server, OneExchange(request_id=2), "nothing/here", {"_meta": envelope()},
                  connection=Connection.from_envelope(LATEST_MODERN_VERSION, None, {}), lifespan_state={})
    assert unknown.value.code == types.METHOD_NOT_FOUND


def test_a_hand_built_connection_reads_its_envelope_as_the_official_one() -> None:
    connection = Connection.from_envelope(LATEST_MODERN_VERSION, {"name": "probe", "version": "1"},
                                          {"elicitation": {}})
    assert connection.initialize_accepted and not connection.has_standalone_channel
    assert connection.client_params is not None and connection.client_params.client_info.name == "probe"
    assert connection.check_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability()))
    assert not connection.check_capability(types.ClientCapabilities(sampling=types.SamplingCapability()))
    broken = Connection.from_envelope(LATEST_MODERN_VERSION, "not an object", {"elicitation": "nope"})
    assert broken.client_params is None and broken.session_id is None
    with pytest.raises(MCPError):  # 2026-07-28 cannot push a request
        connection.send_request(types.PingRequest())
    loop = Connection.for_loop(object(), session_id="s1")
    assert (loop.session_id, loop.protocol_version, loop.initialize_accepted) == ("s1", LEGACY, False)


def test_a_connection_is_served_by_one_server() -> None:
    connection = Connection.from_envelope(LATEST_MODERN_VERSION, None, {})
    serve_one(build_server([]), OneExchange(request_id=1), "tools/list", {"_meta": envelope()},
              connection=connection, lifespan_state={})
    with pytest.raises(ValueError, match="another server"):
        serve_one(build_server([]), OneExchange(request_id=2), "tools/list", {"_meta": envelope()},
                  connection=connection, lifespan_state={})


@MODES
def test_serve_connection_serves_a_hand_built_stdio_loop(tmp_path: Path, mode: str, version: str) -> None:
    program = tmp_path / "loop_server.py"
    program.write_text(LOOP_SERVER)
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with Client(StdioServerParameters(command=sys.executable, args=[str(program)], env=env), mode=mode) as client:
        assert [tool.name for tool in client.list_tools().tools] == ["add"]
        result = client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert result.content[0].text == f"5 apples at {version}"


def test_a_transport_context_is_a_frozen_record_built_from_its_fields() -> None:
    """What a custom entry builds: every field by keyword, with the dataclass's defaults (its own
    ``__init__`` names them all), frozen, compared and replaced as a dataclass is."""
    import dataclasses
    import inspect

    parameters = inspect.signature(TransportContext).parameters
    fields = dataclasses.fields(TransportContext)
    assert list(parameters) == [f.name for f in fields]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert [p.default for p in parameters.values()] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields]

    made: list[str] = []
    transport = TransportContext(kind="custom", can_send_request=True, headers={"x": "1"}, principal="ada",
                                 client_address="10.0.0.1", access_token="token",
                                 make_request=lambda: made.append("request") or "native")
    assert (transport.kind, transport.can_send_request, transport.principal) == ("custom", True, "ada")
    assert transport == TransportContext(kind="custom", can_send_request=True, headers={"x": "1"}, principal="ada",
                                         client_address="10.0.0.1", access_token="token",
                                         make_request=transport.make_request)
    with pytest.raises(dataclasses.FrozenInstanceError):
        transport.kind = "other"  # type: ignore[misc]
    assert dataclasses.replace(transport, principal="bob").principal == "bob"
    assert (transport.request, transport.request, made) == ("native", "native", ["request"])
    assert TransportContext(kind="stdio", can_send_request=False).request is None
    assert "principal='ada'" in repr(transport)
