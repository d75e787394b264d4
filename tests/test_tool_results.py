"""A tool's return value reaches the client byte for byte the same, whichever route builds its result.

A served call of a plain ``MCPServer`` answers a return made only of text in its wire form
(``Tool.invoke(..., wire=True)``); a subclass overriding ``call_tool``, and an extension that
intercepts tool calls, still get the ``CallToolResult`` model, as the API promises. Both routes
are compared here over real HTTP in both eras, for every kind of return value that ``to_content``
and the output schema turn into a result, the invalid ones included.
"""

from __future__ import annotations

import enum
from typing import Any, Callable

import pytest
from conftest import final_message, legacy_handshake, modern_post, request_message
from pydantic import BaseModel

from minimcp.server.extension import Extension
from minimcp.server.mcpserver import Image, MCPServer
from minimcp.server.mcpserver.exceptions import ToolError
from minimcp.types import CallToolResult, TextContent

PNG = b"\x89PNG\r\n\x1a\n"


class Color(str, enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int
    label: str | None = None


def _register(mcp: MCPServer) -> None:
    """The same tools on every server compared: one per kind of return value."""

    @mcp.tool()
    def text() -> str:
        return "héllo \u2028 😀 \"quoted\""

    @mcp.tool()
    def color() -> Color:
        return Color.RED

    @mcp.tool()
    def unannotated():  # type: ignore[no-untyped-def]  # no output schema: the value becomes JSON text
        return {"a": 1, "b": None}

    @mcp.tool()
    def mapping() -> dict[str, Any]:
        return {"a": None, "n": [1, 2.5], "s": "x"}

    @mcp.tool()
    def point() -> Point:
        return Point(x=3)

    @mcp.tool()
    def nothing() -> None:
        return None

    @mcp.tool()
    def words() -> list[str]:
        return ["one", "two"]

    @mcp.tool()
    def number() -> int:
        return 5

    @mcp.tool()
    def flag() -> bool:
        return True

    @mcp.tool()
    def mixed() -> list[Any]:
        return ["caption", Image(data=PNG, format="png")]

    @mcp.tool()
    def explicit() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="made by hand")])

    @mcp.tool()
    def failing() -> str:
        raise ToolError("no luck")

    @mcp.tool()
    def crashing() -> str:
        raise RuntimeError("secret detail")

    @mcp.tool()
    def wrong_output() -> int:
        return "not a number"  # type: ignore[return-value]  # fails its own output schema

    @mcp.tool()
    def echo(text: str) -> str:
        return text


CALLS = [("text", {}), ("color", {}), ("unannotated", {}), ("mapping", {}), ("point", {}), ("nothing", {}),
         ("words", {}), ("number", {}), ("flag", {}), ("mixed", {}), ("explicit", {}), ("failing", {}),
         ("crashing", {}), ("wrong_output", {}), ("echo", {"text": "hi"}), ("echo", {"text": 7}),
         ("missing", {})]


class _Overriding(MCPServer):
    """A subclass that reads the model ``call_tool`` returns."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[type] = []

    def call_tool(self, name: str, arguments: dict[str, Any] | None, context: Any = None) -> Any:
        result = super().call_tool(name, arguments, context)
        self.seen.append(type(result))
        return result


class _Intercepting(Extension):
    """An extension that reads what the tool call returned."""

    identifier = "com.example/results"

    def __init__(self) -> None:
        self.seen: list[type] = []

    def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        result = call_next(ctx)
        self.seen.append(type(result))
        return result


def _servers() -> dict[str, MCPServer]:
    servers: dict[str, MCPServer] = {
        "plain": MCPServer("results"), "overriding": _Overriding("results"),
        "intercepted": MCPServer("results", extensions=[_Intercepting()]),
    }
    for mcp in servers.values():
        _register(mcp)
    return servers


def _legacy_bodies(url: str) -> list[bytes]:
    session = legacy_handshake(url)
    bodies = []
    for number, (name, arguments) in enumerate(CALLS):
        message = request_message("tools/call", {"name": name, "arguments": arguments}, id=number)
        response = session.post(message)
        assert response.status_code == 200, response.text
        final_message(response, number)  # one answer, whatever its framing
        bodies.append(response.content)
    return bodies


def _modern_bodies(url: str) -> list[bytes]:
    bodies = []
    for number, (name, arguments) in enumerate(CALLS):
        response, _ = modern_post(url, "tools/call", {"name": name, "arguments": arguments}, id=number)
        final_message(response, number)
        bodies.append(response.content)
    return bodies


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_every_return_value_reaches_the_wire_alike_by_either_route(serve_http: Callable[..., str], era: str) -> None:
    servers = _servers()
    read = _legacy_bodies if era == "legacy" else _modern_bodies
    bodies = {kind: read(serve_http(mcp, json_response=True)) for kind, mcp in servers.items()}
    for number, call in enumerate(CALLS):
        assert bodies["plain"][number] == bodies["overriding"][number] == bodies["intercepted"][number], call
    overriding, intercepted = servers["overriding"], servers["intercepted"]
    assert isinstance(overriding, _Overriding)
    # The routes that read a result got models, never a wire dict (the unknown tool and the
    # failures raise inside call_tool, so they come back to the override as no result at all).
    assert overriding.seen and set(overriding.seen) <= {CallToolResult}
    extension = intercepted.extensions[0]
    assert isinstance(extension, _Intercepting)
    assert len(extension.seen) == len(CALLS) and set(extension.seen) == {CallToolResult}


def test_a_text_result_answered_in_wire_form_is_the_models_own(serve_http: Callable[..., str]) -> None:
    """The wire route's answers, spelled out: what ``dump(CallToolResult(...))`` gives, key for key."""
    mcp = MCPServer("results")
    _register(mcp)
    url = serve_http(mcp, json_response=True)
    answers = {}
    for name in ("echo", "mapping", "nothing", "words", "unannotated"):
        arguments = {"text": "hi"} if name == "echo" else {}
        response, _ = modern_post(url, "tools/call", {"name": name, "arguments": arguments}, id=name)
        answers[name] = final_message(response, name)["result"]
    server_info = {"io.modelcontextprotocol/serverInfo": {"name": "results", "version": ""}}
    assert list(answers["echo"]) == ["content", "structuredContent", "isError", "resultType", "_meta"]
    assert answers["echo"] == {"content": [{"type": "text", "text": "hi"}], "structuredContent": {"result": "hi"},
                               "isError": False, "resultType": "complete", "_meta": server_info}
    assert answers["mapping"]["structuredContent"] == {"a": None, "n": [1, 2.5], "s": "x"}
    assert answers["nothing"]["content"] == [] and answers["nothing"]["structuredContent"] == {"result": None}
    assert answers["words"]["content"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert "structuredContent" not in answers["unannotated"]
    assert answers["unannotated"]["content"] == [{"type": "text", "text": '{\n  "a": 1,\n  "b": null\n}'}]


def test_call_tool_in_process_still_returns_the_model() -> None:
    mcp = MCPServer("results")
    _register(mcp)
    result = mcp.call_tool("echo", {"text": "hi"})
    assert isinstance(result, CallToolResult)
    assert result.content == [TextContent(type="text", text="hi")] and result.structured_content == {"result": "hi"}


BAD_PARAMS = [{"arguments": {}}, {"name": 5, "arguments": {}}, {"name": None}, {"name": "echo", "arguments": [1]},
              {"name": "echo", "arguments": "text"}, {"name": ["echo"], "arguments": {"text": "hi"}}]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_params_the_handler_would_not_take_are_refused_alike_by_either_route(
        serve_http: Callable[..., str], era: str) -> None:
    """``MCPServer`` reads a call's ``name`` and ``arguments`` without validating a params model
    when they have their types; anything else is validated, so each refusal is the model's."""
    servers = _servers()
    answers: dict[str, list[dict[str, Any]]] = {}
    for kind in ("plain", "intercepted"):
        url = serve_http(servers[kind], json_response=True)
        session = legacy_handshake(url) if era == "legacy" else None
        answers[kind] = []
        for number, params in enumerate(BAD_PARAMS):
            if session is not None:
                response = session.post(request_message("tools/call", params, id=number))
            else:
                headers = {"Mcp-Name": str(params.get("name"))}
                response, _ = modern_post(url, "tools/call", params, id=number, headers=headers)
            answers[kind].append(final_message(response, number))
    assert answers["plain"] == answers["intercepted"]
    for params, answer in zip(BAD_PARAMS, answers["plain"]):
        # On 2026-07-28 a name that is not a string cannot match its Mcp-Name header: the envelope
        # refuses it first (-32020); the rest reach the handler's params.
        routed = era == "legacy" or params.get("name") == "echo"
        assert answer["error"]["code"] == (-32602 if routed else -32020), (params, answer)
    if era == "legacy":  # a _meta that is not an object (2026-07-28 refuses it in its envelope first)
        session = legacy_handshake(serve_http(servers["plain"], json_response=True))
        response = session.post(request_message("tools/call", {"name": "echo", "arguments": {"text": "hi"},
                                                               "_meta": "x"}, id="m"))
        assert final_message(response, "m")["error"] == {"code": -32602, "message": "Invalid request parameters"}
