"""The deprecated HTTP+SSE transport (``minimcp.client.sse``) against the official SDK's own SSE
server, and ``ClientSessionGroup`` gathering several real servers."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, server_process
from minimcp import Client, MCPError
from minimcp.client.session_group import (
    ClientSessionGroup,
    ClientSessionParameters,
    SseServerParameters,
    StreamableHttpParameters,
)
from minimcp.client.sse import sse_client
from minimcp.client.stdio import StdioServerParameters
from minimcp.server import MCPServer
from minimcp.types import ElicitResult

SERVERS = Path(__file__).parent / "servers"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    with server_process([sys.executable, str(SERVERS / "official_sse.py")]) as served:
        yield f"{served.base}/sse"


def _confirm(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


def test_a_call_and_an_elicitation_over_the_old_transport(sse_url: str) -> None:
    sessions: list[str] = []
    with Client(sse_client(sse_url, on_session_created=sessions.append), mode="legacy",
                elicitation_callback=_confirm) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        assert client.call_tool("confirm", {"n": 7}).content[0].text == "confirmed 7"
        assert [tool.name for tool in client.list_tools().tools] == ["add", "confirm"]
    assert len(sessions) == 1 and sessions[0]


def test_threads_share_the_old_transport(sse_url: str) -> None:
    sums: list[int] = []
    with Client(sse_client(sse_url), mode="legacy") as client:
        def add(n: int) -> None:
            sums.append(client.call_tool("add", {"a": n, "b": n}).structured_content["result"])

        workers = [threading.Thread(target=add, args=(n,)) for n in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
    assert sorted(sums) == [2 * n for n in range(8)]


def test_a_url_that_is_not_an_sse_endpoint_fails_clearly(sse_url: str) -> None:
    with pytest.raises(MCPError, match="answered HTTP 404"):
        with Client(sse_client(sse_url.replace("/sse", "/nowhere")), mode="legacy"):
            pass


def _streamable(name: str, tool: Callable[..., Any]) -> MCPServer:
    mcp = MCPServer(name)
    mcp.tool()(tool)
    return mcp


def test_a_group_gathers_three_servers_on_three_transports(sse_url: str, serve_http: Callable[..., str]) -> None:
    def weather(city: str) -> str:
        return f"sunny in {city}"

    http_url = serve_http(_streamable("weather", weather))
    stdio = StdioServerParameters(command=sys.executable, args=[str(SERVERS / "stdio_server.py")],
                                  env={"PYTHONPATH": str(ROOT)})
    with ClientSessionGroup() as group:
        group.connect_to_server(StreamableHttpParameters(url=http_url))
        group.connect_to_server(SseServerParameters(url=sse_url),
                                ClientSessionParameters(elicitation_callback=_confirm))
        group.connect_to_server(stdio)
        assert {"weather", "add", "confirm", "echo"} <= set(group.tools)
        assert "greet" in group.prompts
        assert group.call_tool("weather", {"city": "Oslo"}).content[0].text == "sunny in Oslo"
        assert group.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        assert group.call_tool("confirm", {"n": 1}).content[0].text == "confirmed 1"
        assert len(group.sessions) == 3
        web = group.sessions[0]
        group.disconnect_from_server(web)
        assert "weather" not in group.tools
        with pytest.raises(MCPError, match="No server in this group has a tool named 'weather'"):
            group.call_tool("weather", {"city": "Oslo"})
        with pytest.raises(MCPError, match="not managed or already disconnected"):
            group.disconnect_from_server(web)


def test_a_name_two_servers_share_needs_the_hook(serve_http: Callable[..., str]) -> None:
    def ping() -> str:
        return "pong"

    first, second = serve_http(_streamable("first", ping)), serve_http(_streamable("second", ping))
    with ClientSessionGroup() as group:
        group.connect_to_server(StreamableHttpParameters(url=first))
        with pytest.raises(MCPError, match="already exist in group tools"):
            group.connect_to_server(StreamableHttpParameters(url=second))
        assert set(group.tools) == {"ping"}
    with ClientSessionGroup(component_name_hook=lambda name, info: f"{info.name}.{name}") as group:
        group.connect_to_server(StreamableHttpParameters(url=first))
        group.connect_to_server(StreamableHttpParameters(url=second))
        assert set(group.tools) == {"first.ping", "second.ping"}
        assert group.call_tool("second.ping").content[0].text == "pong"
