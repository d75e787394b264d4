"""Tags, ``enable``/``disable`` at run time and the per-request ``component_filter``, over real HTTP
in both eras: what a caller cannot see it cannot call, and a change is announced as ``list_changed``.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from conftest import MODES, heard_methods, legacy_handshake, modern_rpc, run_docs_program

from minimcp import Client, MCPError
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from minimcp.types import INVALID_PARAMS

WAIT = 10


def _server(**options: Any) -> MCPServer:
    mcp = MCPServer("shop", **options)

    @mcp.tool(tags={"admin"})
    def wipe() -> str:
        return "wiped"

    @mcp.tool(tags={"sales", "public"})
    def quote(item: str) -> str:
        return f"{item}: 3 EUR"

    @mcp.tool()
    def ping_me() -> str:
        return "pong"

    @mcp.resource("stock://count", tags={"admin"})
    def count() -> str:
        return "12"

    @mcp.resource("stock://{item}", tags="admin")
    def stock(item: str) -> str:
        return f"{item}: 4"

    @mcp.prompt(tags={"sales"})
    def pitch(item: str) -> str:
        return f"Buy {item}"

    return mcp


def _names(client: Client) -> list[str]:
    return [tool.name for tool in client.list_tools().tools]


@MODES
def test_a_disabled_tool_is_neither_listed_nor_callable(serve_http: Callable[..., str], mode: str,
                                                         version: str) -> None:
    mcp = _server()
    with Client(serve_http(mcp), mode=mode) as client:
        assert _names(client) == ["wipe", "quote", "ping_me"]
        mcp.disable(tags={"admin"})
        assert _names(client) == ["quote", "ping_me"]
        refused = client.call_tool("wipe", {})
        assert refused.is_error and refused.content[0].text == "Tool 'wipe' is disabled"
        assert client.call_tool("ping_me", {}).content[0].text == "pong"  # the server keeps serving
        mcp.enable("wipe")  # the later rule wins for the one it names
        assert _names(client) == ["wipe", "quote", "ping_me"]
        assert client.call_tool("wipe", {}).content[0].text == "wiped"


@MODES
def test_resources_and_prompts_are_disabled_the_same_way(serve_http: Callable[..., str], mode: str,
                                                         version: str) -> None:
    mcp = _server()
    with Client(serve_http(mcp), mode=mode) as client:
        mcp.disable(tags={"admin"}, kind="resource")
        mcp.disable("pitch")
        assert client.list_resources().resources == []
        assert client.list_resource_templates().resource_templates == []
        assert client.list_prompts().prompts == []
        assert _names(client) == ["wipe", "quote", "ping_me"]  # kind="resource" left the admin tool on
        for uri in ("stock://count", "stock://apples"):
            with pytest.raises(MCPError) as refused:
                client.read_resource(uri)
            assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, f"Resource {uri} is disabled")
        with pytest.raises(MCPError) as refused:
            client.get_prompt("pitch", {"item": "tea"})
        assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, "Prompt 'pitch' is disabled")
        mcp.enable("stock://count", "pitch")
        assert client.read_resource("stock://count").contents[0].text == "12"
        assert [p.name for p in client.list_prompts().prompts] == ["pitch"]
        with pytest.raises(MCPError):
            client.read_resource("stock://apples")  # its template is still off


def test_a_legacy_client_hears_list_changed_once_per_change(serve_http: Callable[..., str]) -> None:
    mcp = _server()
    heard, on_message = heard_methods()

    with Client(serve_http(mcp), mode="legacy", message_handler=on_message) as client:
        client.list_tools()
        mcp.disable(tags={"admin"}, kind="tool")
        assert heard.get(timeout=WAIT) == "notifications/tools/list_changed"
        mcp.disable(tags={"admin"}, kind="tool")  # nothing changes: nothing is announced
        mcp.disable("pitch")
        assert heard.get(timeout=WAIT) == "notifications/prompts/list_changed"
        mcp.disable("stock://count")
        assert heard.get(timeout=WAIT) == "notifications/resources/list_changed"
        assert heard.empty()


def test_a_modern_listener_hears_each_kind_that_changed(serve_http: Callable[..., str]) -> None:
    mcp = _server()
    with Client(serve_http(mcp), mode="auto") as client, \
            client.listen(tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True) as sub:
        mcp.disable(tags={"sales"})  # a tool and a prompt
        first, second = sub.next(timeout=WAIT), sub.next(timeout=WAIT)
        assert {type(first), type(second)} == {ToolsListChanged, PromptsListChanged}
        mcp.disable(tags={"admin"}, kind="resource")
        assert isinstance(sub.next(timeout=WAIT), ResourcesListChanged)


@MODES
def test_the_component_filter_shows_each_caller_its_own_set(serve_http: Callable[..., str], mode: str,
                                                            version: str) -> None:
    def by_team(ctx: Context, component: Any) -> bool:
        team = (ctx.headers or {}).get("x-team")
        return "admin" not in component.tags or team == "ops"

    url = serve_http(_server(component_filter=by_team))
    with Client(url, mode=mode, headers={"X-Team": "ops"}) as ops, \
            Client(url, mode=mode, headers={"X-Team": "sales"}) as sales:
        assert _names(ops) == ["wipe", "quote", "ping_me"]
        assert _names(sales) == ["quote", "ping_me"]
        assert ops.call_tool("wipe", {}).content[0].text == "wiped"
        hidden = sales.call_tool("wipe", {})
        assert hidden.is_error and hidden.content[0].text == "Unknown tool: wipe"  # its existence is not revealed
        assert [r.name for r in sales.list_resources().resources] == []
        with pytest.raises(MCPError) as refused:
            sales.read_resource("stock://apples")
        assert refused.value.message == "Unknown resource: stock://apples"
        assert ops.read_resource("stock://apples").contents[0].text == "apples: 4"


def test_a_filtered_listing_is_private_to_its_caller(serve_http: Callable[..., str]) -> None:
    url = serve_http(_server(component_filter=lambda ctx, component: True))
    assert modern_rpc(url, "tools/list", {})["result"]["cacheScope"] == "private"


def test_a_failing_filter_fails_only_its_request(serve_http: Callable[..., str]) -> None:
    def broken(ctx: Context, component: Any) -> bool:
        if component.name == "wipe":
            raise RuntimeError("filter bug")
        return True

    url = serve_http(_server(component_filter=broken))
    legacy = legacy_handshake(url)
    answer = legacy.rpc("tools/list", {})
    assert "error" in answer and "result" not in answer
    assert legacy.call_tool("ping_me", {})["content"][0]["text"] == "pong"


def test_rules_must_name_something() -> None:
    mcp = _server()
    with pytest.raises(ValueError):
        mcp.disable()
    with pytest.raises(ValueError):
        mcp.enable("wipe", kind="widget")  # type: ignore[arg-type]
    def numbered() -> str:
        return "x"

    with pytest.raises(TypeError):
        mcp.tool(tags={1})(numbered)  # type: ignore[arg-type]
    mcp.disable("later")

    @mcp.tool()
    def later() -> str:
        return "on"

    assert [tool.name for tool in mcp.list_tools()] == ["wipe", "quote", "ping_me"]  # a rule holds for later ones


def test_the_documented_example_runs_as_printed(capsys: pytest.CaptureFixture[str]) -> None:
    run_docs_program("topics/shop.py")
    assert capsys.readouterr().out.splitlines() == ["['quote']", "Tool 'wipe' is disabled", "wiped"]
