"""Server middleware (``minimcp.server.context.ServerMiddleware``): ``(ctx, call_next)`` around every
message a server receives, on every transport and in both eras, as the official SDK runs it.

The server program records what its middleware saw and hands the record back through a tool, so the
same assertions hold in memory, over loopback HTTP and over a stdio subprocess.
"""

from __future__ import annotations

import dataclasses
import runpy
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import DOCS_SOURCES, LEGACY, MODES, final_message, legacy_handshake, modern_post, modern_rpc

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import Server
from minimcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.types import METHOD_NOT_FOUND, CallToolResult, EmptyResult, ElicitResult, ListToolsResult, TextContent, Tool

SERVER = textwrap.dedent(
    '''
    import json

    import minimcp.types as types
    from minimcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from minimcp.server.lowlevel import Server
    from minimcp.server.stdio import stdio_server
    from minimcp.shared.exceptions import MCPError

    seen = []


    def describe(result):
        return "dict " + ",".join(sorted(result)) if isinstance(result, dict) else type(result).__name__


    def record(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        kind = "note" if ctx.request_id is None else "request"
        seen.append(f"{kind} {ctx.method}")
        try:
            result = call_next(ctx)
        except MCPError as refused:
            seen.append(f"{ctx.method} raised {refused.error.code}")
            raise
        seen.append(f"{ctx.method} -> {describe(result)}")
        return result


    def refuse_secret(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and (ctx.params or {}).get("name") == "secret":
            raise MCPError(code=types.INVALID_PARAMS, message="secret is off limits")
        return call_next(ctx)


    def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name=name, input_schema={"type": "object"})
                                            for name in ("seen", "signup", "secret")])


    def call_tool(ctx, params):
        if params.name == "seen":
            record = [entry for entry in seen if "tools/call" in entry or "tools/list" in entry
                      or "nothing/here" in entry]
            return types.CallToolResult(content=[types.TextContent(text=json.dumps(record))])
        if params.name == "signup":
            if ctx.session.can_send_request:
                answer = ctx.session.elicit_form("Your name?", {"type": "object"}, related_request_id=ctx.request_id)
                return types.CallToolResult(content=[types.TextContent(text=f"hello {answer.content['name']}")])
            if "name" not in (params.input_responses or {}):
                ask = types.ElicitRequest(params=types.ElicitRequestFormParams(
                    message="Your name?", requested_schema={"type": "object"}))
                return types.InputRequiredResult(input_requests={"name": ask})
            return types.CallToolResult(content=[types.TextContent(
                text=f"hello {params.input_responses['name'].content['name']}")])
        return types.CallToolResult(content=[types.TextContent(text="the secret")])


    server = Server("middleware-demo", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(record)
    server.middleware.append(refuse_secret)


    if __name__ == "__main__":
        with stdio_server() as (read_stream, write_stream):
            server.run(read_stream, write_stream, server.create_initialization_options())
    '''
)


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "middleware_server.py"
    path.write_text(SERVER)
    return path


def name_it(context: ClientRequestContext, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def _seen(client: Client) -> list[str]:
    import json

    return json.loads(client.call_tool("seen", {}).content[0].text)


@MODES
def test_middleware_wraps_every_request_and_sees_the_wire_result(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode, elicitation_callback=name_it) as client:
        client.list_tools()
        assert client.call_tool("signup", {}).content[0].text == "hello Ada"
        with pytest.raises(MCPError) as refused:
            client.call_tool("secret", {})
        assert refused.value.error.message == "secret is off limits"
        seen = _seen(client)
    modern = version != LEGACY
    listed = "dict _meta,cacheScope,resultType,tools,ttlMs" if modern else "dict tools"
    called = "dict _meta,content,isError,resultType" if modern else "dict content,isError"
    # Legacy: the question is asked from inside call_next, one tools/call. 2026-07-28: the round
    # ends with an input_required result and the retry is a second request through the chain.
    rounds = (["request tools/call", "tools/call -> dict _meta,inputRequests,resultType", "request tools/call",
               f"tools/call -> {called}"] if modern else ["request tools/call", f"tools/call -> {called}"])
    assert seen == ["request tools/list", f"tools/list -> {listed}", *rounds,
                    "request tools/call", f"tools/call raised {-32602}", "request tools/call"]


def test_legacy_middleware_sees_the_handshake_and_notifications() -> None:
    program: dict[str, Any] = {}
    exec(compile(SERVER, "middleware_server.py", "exec"), program)
    with Client(program["server"], mode="legacy") as client:
        client.list_tools()
    assert program["seen"][:4] == ["request initialize", "initialize -> dict capabilities,protocolVersion,serverInfo",
                                   "note notifications/initialized", "notifications/initialized -> NoneType"]


@MODES
def test_an_unknown_method_is_refused_inside_the_chain(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            client.session.send_request("nothing/here", {}, EmptyResult)
        assert refused.value.error.code == METHOD_NOT_FOUND
        assert _seen(client)[:2] == ["request nothing/here", f"nothing/here raised {METHOD_NOT_FOUND}"]


def _build(middleware: list[ServerMiddleware[Any]]) -> Server[Any]:
    def list_tools(ctx: ServerRequestContext[Any], params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[Tool(name="echo", input_schema={"type": "object"})])

    def call_tool(ctx: ServerRequestContext[Any], params: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=f"{params.name} {params.arguments}")])

    server: Server[Any] = Server("rewrite", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.extend(middleware)
    return server


def rewrite_arguments(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Passes a changed context on: the handler is given the rewritten params."""
    if ctx.method == "tools/call":
        ctx = dataclasses.replace(ctx, params={**(ctx.params or {}), "arguments": {"who": "middleware"}})
    return call_next(ctx)


def answer_listing(ctx: ServerRequestContext[Any, Any], nxt: CallNext) -> HandlerResult:
    """Answers in the handler's place (a model), without calling the rest of the chain."""
    if ctx.method == "tools/list":
        return ListToolsResult(tools=[Tool(name="cached", input_schema={"type": "object"})])
    return nxt(ctx)


@MODES
def test_middleware_can_rewrite_the_params_and_answer_in_place(connect: Any, mode: str, version: str) -> None:
    with connect(_build([rewrite_arguments, answer_listing]), mode=mode) as client:
        assert [tool.name for tool in client.list_tools().tools] == ["cached"]
        assert client.call_tool("echo", {"who": "client"}).content[0].text == "echo {'who': 'middleware'}"


@MODES
def test_mcpserver_takes_middleware_at_construction(connect: Any, mode: str, version: str) -> None:
    timings: list[str] = []

    def timed(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return call_next(ctx)
        finally:
            timings.append(ctx.method)

    mcp = MCPServer("timed", middleware=[timed])

    @mcp.tool()
    def greet(name: str, ctx: Context) -> str:
        return f"hello {name}"

    assert mcp.middleware[1:] == [timed]  # inside the span middleware, as the official list orders them
    with connect(mcp, mode=mode) as client:
        assert client.call_tool("greet", {"name": "Ada"}).content[0].text == "hello Ada"
    assert "tools/call" in timings


def test_a_crashing_middleware_fails_only_its_request(serve_http: Any) -> None:
    def broken(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            raise RuntimeError("middleware bug")
        return call_next(ctx)

    url = serve_http(_build([broken]))
    answer = modern_rpc(url, "tools/call", {"name": "echo", "arguments": {}})
    assert answer["error"] == {"code": -32603, "message": "Internal server error"}
    assert modern_rpc(url, "tools/list")["result"]["tools"][0]["name"] == "echo"
    session = legacy_handshake(url)
    assert "error" in session.rpc("tools/call", {"name": "echo", "arguments": {}})
    assert session.rpc("tools/list")["result"]["tools"][0]["name"] == "echo"


def test_an_unknown_method_over_http_is_404_after_the_middleware_saw_it(serve_http: Any) -> None:
    seen: list[str] = []

    def record(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        seen.append(ctx.method)
        return call_next(ctx)

    url = serve_http(_build([record]))
    response, message = modern_post(url, "nothing/here", {})
    assert response.status_code == 404
    assert final_message(response, message["id"])["error"]["code"] == METHOD_NOT_FOUND
    assert seen == ["nothing/here"]


def test_the_documented_middleware_times_every_request(caplog: pytest.LogCaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/topics/lowlevel.md's middleware (docs_src/topics/timed.py), added to its adder server."""
    monkeypatch.syspath_prepend(str(DOCS_SOURCES / "topics"))
    monkeypatch.delitem(sys.modules, "adder", raising=False)  # a fresh server, whatever ran before
    program = runpy.run_path(str(DOCS_SOURCES / "topics" / "timed.py"), run_name="timed")
    monkeypatch.delitem(sys.modules, "adder")
    caplog.set_level("INFO")
    with Client(program["server"], mode="legacy") as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"
    timed = [record.getMessage().split(" took ")[0] for record in caplog.records if " took " in record.getMessage()]
    assert timed[:3] == ["initialize", "notifications/initialized", "tools/call"]
