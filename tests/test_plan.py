"""One request, one plan: the tier is asked once what a request is, and everyone below reads the answer.

Served over real HTTP in both eras: a ``tools/call`` finds its tool once (the planner's lookup), a
bare ``Server``'s per-tool hooks are each asked once per call, a handler sees the plan as
``ctx.plan``, and a middleware that passes another tool's name on is obeyed (the plan it made
stale is made again, for the name the handler is given).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from minimcp.client import Client
from minimcp.server import MCPServer, Server
from minimcp.server.lowlevel import ServerHooks
from minimcp.server.mcpserver import Context
from minimcp.types import CallToolResult, TextContent

MODES = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])


class CountingServer(MCPServer):
    """A server that counts how often a tool is looked up, per name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lookups: dict[str, int] = {}
        self._lookups_lock = threading.Lock()  # guards lookups: the planner runs on request threads

    def get_tool(self, name: Any) -> Any:
        with self._lookups_lock:
            self.lookups[name] = self.lookups.get(name, 0) + 1
        return super().get_tool(name)


def _counting_server(middleware: Any = ()) -> CountingServer:
    mcp = CountingServer("planned", middleware=middleware)

    @mcp.tool(timeout=30)
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def greet(name: str, ctx: Context) -> str:  # takes a Context, so its call is not silent
        return f"hello {name}" if ctx.request_id else "no request"

    return mcp


@MODES
@pytest.mark.parametrize("tool, arguments, answer", [("echo", {"text": "hi"}, "hi"),
                                                     ("greet", {"name": "ada"}, "hello ada")])
def test_a_served_tool_call_finds_its_tool_once(serve_http: Any, mode: str, tool: str, arguments: dict[str, Any],
                                                answer: str) -> None:
    mcp = _counting_server()
    with Client(serve_http(mcp), mode=mode) as client:
        for _ in range(3):
            result = client.call_tool(tool, arguments)
            assert result.content[0].text == answer  # type: ignore[union-attr]
    assert mcp.lookups == {tool: 3}


@MODES
def test_a_bare_servers_hooks_are_each_asked_once_per_call(serve_http: Any, mode: str) -> None:
    asked: dict[str, int] = {}
    lock = threading.Lock()  # guards asked: hooks run on request threads

    def counted(hook: str, answer: Any) -> Any:
        def ask(*_: Any) -> Any:
            with lock:
                asked[hook] = asked.get(hook, 0) + 1
            return answer
        return ask

    def call_tool(ctx: Any, params: Any) -> CallToolResult:
        plan = ctx.plan
        return CallToolResult(content=[TextContent(text=f"{plan.name} {plan.timeout} {plan.silent}")])

    hooks = ServerHooks(get_tool_timeout=counted("timeout", 5.0), get_tool_silent=counted("silent", True),
                        get_tool_required_scopes=counted("scopes", []),
                        get_tool_input_schema=counted("schema", {"type": "object"}))
    server = Server("hooked", on_call_tool=call_tool, hooks=hooks)
    with Client(serve_http(server), mode=mode) as client:
        assert client.call_tool("any", {}).content[0].text == "any 5.0 True"  # type: ignore[union-attr]
        client.call_tool("other", {})
    assert asked == {"timeout": 2, "silent": 2, "scopes": 2, "schema": 2}


@MODES
def test_a_middleware_that_renames_the_tool_is_obeyed(serve_http: Any, mode: str) -> None:
    import dataclasses

    def rename(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call" and (ctx.params or {}).get("name") == "echo":
            ctx = dataclasses.replace(ctx, params={**ctx.params, "name": "greet", "arguments": {"name": "bob"}})
        return call_next(ctx)

    mcp = _counting_server(middleware=[rename])
    with Client(serve_http(mcp), mode=mode) as client:
        result = client.call_tool("echo", {"text": "hi"})
    assert result.content[0].text == "hello bob"  # type: ignore[union-attr]
    assert mcp.lookups == {"echo": 1, "greet": 1}
