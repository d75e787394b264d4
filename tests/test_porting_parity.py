"""What an official SDK program ported by the rule sees on the MCPServer tier (issue 14).

Each test is one behaviour measured on ``mcp`` 2.3.0 and written down here; each runs over a real
loopback HTTP server and in memory, in both eras where the era matters. Numbers follow the issue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Callable, TypedDict

import pytest
from pydantic import BaseModel

from minimcp import Client, types
from minimcp.server.mcpserver import Context, MCPServer

ERAS = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])


@pytest.fixture(params=["memory", "http"])
def connect(request: pytest.FixtureRequest, serve_http: Callable[..., str]) -> Callable[..., Client]:
    def make(mcp: MCPServer, **options: Any) -> Client:
        return Client(mcp if request.param == "memory" else serve_http(mcp), **options)

    return make


class Place(TypedDict):
    """Where something is."""

    lat: float
    name: str


class Reading:
    celsius: float
    station: str | None = None

    def __init__(self, celsius: float) -> None:
        self.celsius = celsius


class Weather(BaseModel):
    summary: str


def _shapes() -> MCPServer:
    mcp = MCPServer("shapes")

    @mcp.tool()
    def place() -> Place:
        return {"lat": 1.5, "name": "here"}

    @mcp.tool()
    def reading() -> Reading:
        return Reading(21.5)

    @mcp.tool()
    def weather() -> Annotated[types.CallToolResult, Weather]:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="sunny")], structured_content={"summary": "sunny"}
        )

    @mcp.tool()
    def maybe_ask(ctx: Context) -> str | types.InputRequiredResult:
        return "answered"

    return mcp


@ERAS
def test_1_typed_dicts_and_annotated_classes_get_schemas_and_structured_content(
    connect: Callable[..., Client], mode: str
) -> None:
    with connect(_shapes(), mode=mode) as client:
        schemas = {tool.name: tool.output_schema for tool in client.list_tools().tools}
        assert schemas["place"]["title"] == "Place" and set(schemas["place"]["required"]) == {"lat", "name"}
        assert schemas["place"]["description"] == "Where something is."
        assert "description" not in schemas["reading"]
        assert schemas["reading"]["properties"]["celsius"] == {"title": "Celsius", "type": "number"}
        assert schemas["reading"]["required"] == ["celsius"]  # a class attribute with a value is a default
        assert client.call_tool("place").structured_content == {"lat": 1.5, "name": "here"}
        assert client.call_tool("reading").structured_content == {"celsius": 21.5, "station": None}


def test_2_annotated_call_tool_result_advertises_the_model(connect: Callable[..., Client]) -> None:
    with connect(_shapes()) as client:
        schemas = {tool.name: tool.output_schema for tool in client.list_tools().tools}
        assert schemas["weather"] == Weather.model_json_schema()
        assert client.call_tool("weather").structured_content == {"summary": "sunny"}


def test_4_descriptions_are_the_raw_docstring_or_empty(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("docs")

    @mcp.tool()
    def indented() -> str:
        """First line.

        Indented more.
        """
        return ""

    @mcp.resource("memo://plain")
    def plain() -> str:
        return ""

    @mcp.resource("memo://{key}")
    def keyed(key: str) -> str:
        return key

    with connect(mcp) as client:
        (tool,) = client.list_tools().tools
        assert tool.description == indented.__doc__
        assert [r.description for r in client.list_resources().resources] == [""]
        assert [t.description for t in client.list_resource_templates().resource_templates] == [""]


@dataclass
class AppState:
    greeting: str


def test_5_context_takes_two_type_parameters(connect: Callable[..., Client]) -> None:
    from contextlib import contextmanager

    @contextmanager
    def lifespan(server: MCPServer[AppState]) -> Any:
        yield AppState("hello")

    mcp = MCPServer("typed", lifespan=lifespan)

    @mcp.tool()
    def greet(ctx: Context[AppState, Any]) -> str:
        return ctx.request_context.lifespan_context.greeting

    with connect(mcp) as client:
        assert client.call_tool("greet").content[0].text == "hello"


def test_11_official_import_paths() -> None:
    import minimcp.types.jsonrpc
    import minimcp.types.version
    from minimcp.server.mcpserver import Icon
    from minimcp.server.mcpserver.utilities.types import Image

    assert Icon is types.Icon and Image.__name__ == "Image"
    assert minimcp.types.version.LATEST_MODERN_VERSION == "2026-07-28"
    assert minimcp.types.version.is_version_at_least("2025-11-25", "2025-06-18")
    assert types.ElicitRequestedSchema == dict[str, Any]
    request = types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert isinstance(request, minimcp.types.jsonrpc.JSONRPCRequest)



def test_12_str_or_input_required_advertises_the_str_schema(connect: Callable[..., Client]) -> None:
    with connect(_shapes()) as client:
        schemas = {tool.name: tool.output_schema for tool in client.list_tools().tools}
        assert schemas["maybe_ask"]["properties"] == {"result": {"title": "Result", "type": "string"}}
        assert client.call_tool("maybe_ask").structured_content == {"result": "answered"}
