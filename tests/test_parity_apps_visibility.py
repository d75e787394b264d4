"""An MCP Apps ``ui://`` resource follows the tools that render it: a caller who cannot see the tool
(its tags, ``disable``, a ``component_filter``) neither lists nor reads its app, over real HTTP in
both eras; ``add_html_resource(tags=...)`` selects the resource itself as any resource's tags do."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from conftest import MODES, heard_methods

from minimcp import Client, MCPError
from minimcp.server.apps import Apps
from minimcp.server.mcpserver import Context, MCPServer

WAIT = 10
DASHBOARD = "ui://ops/dashboard.html"
WEATHER = "ui://public/weather.html"


def _server(**options: Any) -> MCPServer:
    """A shop's server: an ops-only dashboard app (an ``admin`` tool) and a public weather app."""
    apps = Apps()

    @apps.tool(resource_uri=DASHBOARD, tags={"admin"})
    def dashboard() -> str:
        return "3 orders waiting"

    @apps.tool(resource_uri=WEATHER)
    def weather(city: str) -> str:
        return f"Sunny in {city}"

    apps.add_html_resource(DASHBOARD, "<h1>orders</h1>", title="Orders")
    apps.add_html_resource(WEATHER, "<h1>weather</h1>", title="Weather", tags={"beta"})
    return MCPServer("shop", extensions=[apps], **options)


def _apps(client: Client) -> list[str]:
    return [str(resource.uri) for resource in client.list_resources().resources]


def by_team(ctx: Context, component: Any) -> bool:
    return "admin" not in component.tags or (ctx.headers or {}).get("x-team") == "ops"


@MODES
def test_an_app_hidden_with_its_tool_is_neither_listed_nor_readable(serve_http: Callable[..., str], mode: str,
                                                                     version: str) -> None:
    url = serve_http(_server(component_filter=by_team))
    with Client(url, mode=mode, headers={"X-Team": "ops"}) as ops, \
            Client(url, mode=mode, headers={"X-Team": "sales"}) as sales:
        assert _apps(ops) == [DASHBOARD, WEATHER]
        assert ops.read_resource(DASHBOARD).contents[0].text == "<h1>orders</h1>"  # type: ignore[union-attr]
        assert [tool.name for tool in sales.list_tools().tools] == ["weather"]
        assert _apps(sales) == [WEATHER]
        with pytest.raises(MCPError) as hidden:
            sales.read_resource(DASHBOARD)
        assert hidden.value.message == f"Unknown resource: {DASHBOARD}"  # its existence is not revealed
        assert sales.read_resource(WEATHER).contents[0].text == "<h1>weather</h1>"  # type: ignore[union-attr]


@MODES
def test_disabling_a_tool_disables_its_app_and_the_app_has_tags_of_its_own(
        serve_http: Callable[..., str], mode: str, version: str) -> None:
    mcp = _server()
    with Client(serve_http(mcp), mode=mode) as client:
        mcp.disable(tags={"admin"}, kind="tool")
        assert _apps(client) == [WEATHER]
        with pytest.raises(MCPError) as refused:
            client.read_resource(DASHBOARD)
        assert refused.value.message == f"Resource {DASHBOARD} is disabled"
        mcp.disable(tags={"beta"}, kind="resource")  # the app alone: its tool stays
        assert _apps(client) == []
        assert [tool.name for tool in client.list_tools().tools] == ["weather"]
        mcp.enable(tags={"admin", "beta"})
        assert _apps(client) == [DASHBOARD, WEATHER]


def test_a_legacy_client_hears_that_the_resources_changed_with_the_tool(serve_http: Callable[..., str]) -> None:
    mcp = _server()
    heard, on_message = heard_methods()
    with Client(serve_http(mcp), mode="legacy", message_handler=on_message) as client:
        client.list_tools()
        mcp.disable("dashboard")
        assert {heard.get(timeout=WAIT), heard.get(timeout=WAIT)} == {
            "notifications/tools/list_changed", "notifications/resources/list_changed"}
        assert heard.empty()
