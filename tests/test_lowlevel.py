"""The low-level tier: ``Server(name, on_list_tools=..., on_call_tool=...)`` with ``(ctx, params)`` handlers.

One server file, written the way a program ported from the official SDK's low-level examples is
written (``stdio_server()`` and ``server.run(read, write, options)`` on stdio), served in memory,
over Streamable HTTP and over stdio in a subprocess, and driven by the real client in both eras.
"""

from __future__ import annotations

import contextlib
import textwrap
from pathlib import Path
from typing import Any

from conftest import MODES, run_docs_program
import pytest

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import Server, ServerRequestContext
from minimcp.types import CallToolResult, ElicitResult, TextContent

SERVER = textwrap.dedent(
    '''
    import contextlib

    import minimcp.types as types
    from minimcp.server import Server, ServerRequestContext
    from minimcp.server.stdio import stdio_server
    from minimcp.shared.exceptions import MCPError

    SUM = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
           "required": ["a", "b"]}


    @contextlib.contextmanager
    def lifespan(server):
        yield {"unit": "apples"}


    def list_tools(ctx: ServerRequestContext, params):
        return types.ListToolsResult(tools=[
            types.Tool(name="sum", input_schema=SUM, output_schema={"type": "object"}),
            types.Tool(name="gated", input_schema={"type": "object"}),
            types.Tool(name="crash", input_schema={"type": "object"}),
            types.Tool(name="count", input_schema={"type": "object"}),
            types.Tool(name="signup", input_schema={"type": "object"}),
            types.Tool(name="era", input_schema={"type": "object"}),
        ])


    def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams):
        args = params.arguments or {}
        if params.name == "sum":
            total = args["a"] + args["b"]
            unit = ctx.lifespan_context["unit"]
            return types.CallToolResult(content=[types.TextContent(text=f"{total} {unit}")],
                                        structured_content={"total": total})
        if params.name == "gated":
            raise MCPError(code=types.INVALID_PARAMS, message="this tool is gated", data={"reason": "demo"})
        if params.name == "crash":
            raise RuntimeError("the database is down")
        if params.name == "count":
            for step in (1, 2, 3):
                ctx.session.report_progress(step, 3, f"step {step}")
            return types.CallToolResult(content=[types.TextContent(text="counted")])
        if params.name == "signup":
            if ctx.session.can_send_request:
                answer = ctx.session.elicit_form("Your name?", {"type": "object",
                                                 "properties": {"name": {"type": "string"}}},
                                                 related_request_id=ctx.request_id)
                return types.CallToolResult(content=[types.TextContent(text=f"hello {answer.content['name']}")])
            answers = params.input_responses or {}
            if "name" not in answers:
                ask = types.ElicitRequest(params=types.ElicitRequestFormParams(
                    message="Your name?", requested_schema={"type": "object",
                                                            "properties": {"name": {"type": "string"}}}))
                return types.InputRequiredResult(input_requests={"name": ask}, request_state="asked")
            assert params.request_state == "asked"
            return types.CallToolResult(content=[types.TextContent(text=f"hello {answers['name'].content['name']}")])
        if params.name == "era":
            return types.CallToolResult(content=[types.TextContent(text=ctx.protocol_version)])
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")


    def list_prompts(ctx: ServerRequestContext, params):
        return types.ListPromptsResult(prompts=[types.Prompt(name="greet")])


    def get_prompt(ctx: ServerRequestContext, params: types.GetPromptRequestParams):
        if params.name != "greet":
            raise ValueError(f"Unknown prompt: {params.name}")
        who = (params.arguments or {}).get("who", "world")
        return types.GetPromptResult(messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=f"Say hello to {who}"))])


    server = Server("lowlevel-demo", version="1.0", instructions="small and low", lifespan=lifespan,
                    on_list_tools=list_tools, on_call_tool=call_tool,
                    on_list_prompts=list_prompts, on_get_prompt=get_prompt)


    if __name__ == "__main__":
        with stdio_server() as (read_stream, write_stream):
            server.run(read_stream, write_stream, server.create_initialization_options())
    '''
)



@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "lowlevel_server.py"
    path.write_text(SERVER)
    return path


def name_it(context: ClientRequestContext, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@MODES
def test_handlers_answer_on_every_transport(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and (client.server_info.name, client.server_info.version) == (
            "lowlevel-demo", "1.0")
        assert client.instructions == "small and low"
        assert [tool.name for tool in client.list_tools().tools][:2] == ["sum", "gated"]
        result = client.call_tool("sum", {"a": 2, "b": 3})
        assert (result.content[0].text, result.structured_content) == ("5 apples", {"total": 5})
        assert client.call_tool("era", {}).content[0].text == version
        prompt = client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content.text == "Say hello to Ada"


@MODES
def test_an_mcp_error_travels_verbatim(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        with pytest.raises(MCPError) as failure:
            client.call_tool("gated", {})
    assert (failure.value.code, failure.value.message, failure.value.data) == (-32602, "this tool is gated",
                                                                               {"reason": "demo"})


@pytest.mark.parametrize(("mode", "error"), [("legacy", (0, "the database is down")),
                                             ("auto", (-32603, "Internal server error"))])
def test_an_unexpected_exception_follows_the_era_rule(target: Any, mode: str, error: tuple[int, str]) -> None:
    with Client(target, mode=mode) as client:
        with pytest.raises(MCPError) as failure:
            client.call_tool("crash", {})
    assert (failure.value.code, failure.value.message) == error


@MODES
def test_questions_are_pushed_on_legacy_and_returned_on_2026(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode, elicitation_callback=name_it) as client:
        assert client.call_tool("signup", {}).content[0].text == "hello Ada"


@MODES
def test_progress_reaches_the_caller(target: Any, mode: str, version: str) -> None:
    seen: list[tuple[float, str | None]] = []
    with Client(target, mode=mode) as client:
        result = client.call_tool("count", {}, progress_callback=lambda p, total, message: seen.append((p, message)))
    assert result.content[0].text == "counted"
    assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")]


@MODES
def test_a_method_without_a_handler_is_not_found(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        with pytest.raises(MCPError) as failure:
            client.list_resources()
    assert (failure.value.code, failure.value.message) == (-32601, "Method not found")


def test_capabilities_follow_the_handlers() -> None:
    def prompts(ctx: ServerRequestContext, params: Any) -> Any:
        raise AssertionError("not called")

    server = Server("caps", on_list_prompts=prompts, on_get_prompt=prompts)
    legacy = server.get_capabilities()
    assert (legacy.prompts is not None, legacy.tools, legacy.resources, legacy.logging) == (True, None, None, None)
    assert legacy.prompts.list_changed is False
    with Client(server, mode="legacy") as client:
        assert client.server_capabilities is not None and client.server_capabilities.tools is None
    listening = Server("caps", on_list_tools=prompts, on_subscriptions_listen=prompts)
    assert listening.get_capabilities(protocol_version="2026-07-28").tools.list_changed is True  # type: ignore[union-attr]
    assert listening.get_capabilities().tools.list_changed is False  # type: ignore[union-attr]


def test_async_handlers_are_refused_at_registration() -> None:
    async def list_tools(ctx: ServerRequestContext, params: Any) -> Any:
        raise AssertionError("never awaited")

    with pytest.raises(TypeError, match="delete async/await when porting"):
        Server("async", on_list_tools=list_tools)


def test_a_custom_method_is_served_in_both_eras() -> None:
    from minimcp.types import RequestParams

    server = Server("custom")
    server.add_request_handler("acme/echo", RequestParams, lambda ctx, params: {"method": ctx.method})
    endpoint = server.in_memory_endpoint()
    answer = endpoint.exchange({"jsonrpc": "2.0", "id": 1, "method": "acme/echo", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}, lambda message: None)
    assert answer is not None and answer["result"]["method"] == "acme/echo"
    assert answer["result"]["resultType"] == "complete"


def test_notifications_reach_their_handlers() -> None:
    seen: list[Any] = []
    with pytest.warns(DeprecationWarning):
        server = Server("notes", on_roots_list_changed=lambda ctx, params: seen.append(ctx.session.protocol_version))
    with contextlib.closing(server.in_memory_endpoint()) as endpoint:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        endpoint.exchange({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, lambda m: None)
        endpoint.exchange({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, lambda m: None)
    assert seen == ["2025-11-25"]


def test_text_content_defaults_its_type() -> None:
    """The low-level examples build ``TextContent(text=...)`` without ``type``; the wire still says text."""
    assert TextContent(text="x").type == "text"


def test_the_request_state_boundary_seals_what_a_handler_returns() -> None:
    """With ``RequestStateBoundary`` appended, the client holds a sealed token; the handler reads its
    own plain state back on the next round, and a forged state gets the frozen error."""
    from minimcp.server.request_state import RequestStateBoundary, RequestStateSecurity
    from minimcp.types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
    from minimcp.types import CallToolResult as Result

    seen: list[str | None] = []

    def call_tool(ctx: ServerRequestContext, params: Any) -> Any:
        seen.append(params.request_state)
        if not params.input_responses:
            ask = ElicitRequest(params=ElicitRequestFormParams(message="ok?", requested_schema={"type": "object"}))
            return InputRequiredResult(input_requests={"ok": ask}, request_state="step-1")
        return Result(content=[TextContent(text=f"done after {params.request_state}")])

    server = Server("sealed", on_call_tool=call_tool)
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=server.name))
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    endpoint = server.in_memory_endpoint()

    def call(params: dict[str, Any]) -> dict[str, Any]:
        answer = endpoint.exchange({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "t", "_meta": meta, **params}}, lambda message: None)
        assert answer is not None
        return answer

    first = call({})["result"]
    assert first["resultType"] == "input_required" and first["requestState"] != "step-1"
    second = call({"requestState": first["requestState"], "inputResponses": {"ok": {"action": "accept"}}})
    assert second["result"]["content"][0]["text"] == "done after step-1"
    assert seen == [None, "step-1"]
    forged = call({"requestState": "step-1", "inputResponses": {"ok": {"action": "accept"}}})
    assert forged["error"]["message"] == "Invalid or expired requestState"


def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The low-level page (docs/topics/lowlevel.md) shows a program that runs as printed."""
    run_docs_program("topics/adder.py")
    assert capsys.readouterr().out == "3\n"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_each_in_memory_connection_has_its_own_lifespan(mode: str) -> None:
    """As the official in-memory client: a ported program prints its lifespan's closing line when its
    ``with Client(server)`` ends, and the next connection starts a fresh one."""
    events: list[str] = []

    @contextlib.contextmanager
    def lifespan(server: Server[Any]) -> Any:
        events.append("connected")
        yield {"connection": len(events)}
        events.append("disconnected")

    def call_tool(ctx: ServerRequestContext[Any], params: Any) -> Any:
        return CallToolResult(content=[TextContent(type="text", text=str(ctx.lifespan_context["connection"]))])

    server: Server[Any] = Server("per-connection", lifespan=lifespan, on_call_tool=call_tool)
    with Client(server, mode=mode) as client:
        assert client.call_tool("which", {}).content[0].text == "1"
        assert events == ["connected"]
    assert events == ["connected", "disconnected"]
    with Client(server, mode=mode) as client:
        assert client.call_tool("which", {}).content[0].text == "3"
    assert events == ["connected", "disconnected", "connected", "disconnected"]


def test_an_http_server_enters_its_lifespan_once_for_all_its_clients(serve_http: Any) -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def lifespan(server: Server[Any]) -> Any:
        events.append("connected")
        yield {}
        events.append("disconnected")

    def call_tool(ctx: ServerRequestContext[Any], params: Any) -> Any:
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    url = serve_http(Server("shared", lifespan=lifespan, on_call_tool=call_tool))
    for mode in ("legacy", "2026-07-28", "legacy"):
        with Client(url, mode=mode) as client:
            assert client.call_tool("any", {}).content[0].text == "ok"
    assert events == ["connected"]


def test_a_low_level_server_answers_the_core_through_its_hooks() -> None:
    """``Server(hooks=ServerHooks(...))``: a tool's timeout and the scope each handler runs in, given once
    at construction, are what the core asks (``MCPServer`` builds its hooks the same way)."""
    import threading

    from minimcp.server.lowlevel import ServerHooks
    from minimcp.types import REQUEST_TIMEOUT

    release, scopes = threading.Event(), []

    @contextlib.contextmanager
    def scope() -> Any:
        scopes.append(threading.current_thread().name)
        yield

    def call_tool(ctx: ServerRequestContext, params: Any) -> CallToolResult:
        if params.name == "slow":
            release.wait(30)
        return CallToolResult(content=[TextContent(text=params.name)])

    hooks = ServerHooks(get_tool_timeout=lambda name: 0.2 if name == "slow" else None, call_scope=scope)
    server = Server("hooked", on_call_tool=call_tool, hooks=hooks)
    with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("slow", {})
        assert (timed_out.value.code, timed_out.value.message) == (REQUEST_TIMEOUT, "Tool 'slow' timed out after 0.2 seconds")
        release.set()
        assert client.call_tool("quick", {}).content[0].text == "quick"  # type: ignore[union-attr]
    assert len(scopes) == 2 and all(name.startswith("minimcp-worker") for name in scopes)


@MODES
def test_server_info_stamp_is_what_the_client_is_told_and_a_copy_of_its_own(mode: str, version: str) -> None:
    server = Server("stamped", version="1.2", website_url="https://example.com")
    stamp = server.server_info_stamp
    assert stamp == {"name": "stamped", "version": "1.2", "websiteUrl": "https://example.com"}
    stamp["name"] = "changed"
    assert server.server_info_stamp["name"] == "stamped"
    with Client(server, mode=mode) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info.name == "stamped"
