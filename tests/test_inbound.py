"""``minimcp.shared.inbound``: the official names for the 2026-07-28 header vocabulary.

Headers built with them are what the official SDK builds (checked against ``mcp.shared.inbound``
itself), and a minimcp server over real HTTP accepts a call that carries them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import mcp.shared.inbound as official
import pytest
from pydantic import Field

from conftest import modern_post
from minimcp.server import MCPServer
from minimcp.shared import inbound

SCHEMA = {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "count": {"type": "integer", "x-mcp-header": "Count"},
    "urgent": {"type": "boolean", "x-mcp-header": "Urgent"},
    "note": {"type": "string"},
}}


@pytest.mark.parametrize("value", ["eu-west", "héllo wörld", " padded ", "=?base64?aGk=?=", "line\nbreak", ""])
def test_values_encode_and_decode_as_the_official_sdk_does(value: str) -> None:
    assert inbound.encode_header_value(value) == official.encode_header_value(value)
    assert inbound.decode_header_value(inbound.encode_header_value(value)) == value


def test_broken_values_decode_to_none() -> None:
    for broken in ("=?base64?!!!?=", "=?base64?/w==?=", None):
        assert inbound.decode_header_value(broken) is None
        assert official.decode_header_value(broken) is None


def test_the_annotation_map_and_the_param_headers_match_the_official_ones() -> None:
    assert inbound.x_mcp_header_map(SCHEMA) == official.x_mcp_header_map(SCHEMA)
    arguments = {"region": "eu-west", "count": 3, "urgent": False, "note": "not a header"}
    assert inbound.mcp_param_headers(inbound.x_mcp_header_map(SCHEMA), arguments) == official.mcp_param_headers(
        official.x_mcp_header_map(SCHEMA), arguments)
    assert inbound.mcp_param_headers(inbound.x_mcp_header_map(SCHEMA), {"region": None}) == {}
    assert dict(inbound.NAME_BEARING_METHODS) == dict(official.NAME_BEARING_METHODS)
    assert (inbound.MCP_PROTOCOL_VERSION_HEADER, inbound.MCP_METHOD_HEADER, inbound.MCP_NAME_HEADER,
            inbound.MCP_PARAM_HEADER_PREFIX, inbound.X_MCP_HEADER_KEY) == (
        official.MCP_PROTOCOL_VERSION_HEADER, official.MCP_METHOD_HEADER, official.MCP_NAME_HEADER,
        official.MCP_PARAM_HEADER_PREFIX, official.X_MCP_HEADER_KEY)


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}},
    {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "bad header"}}},
    {"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                      "b": {"type": "string", "x-mcp-header": "a"}}},
])
def test_invalid_annotations_are_named_where_the_official_sdk_names_them(schema: dict[str, Any]) -> None:
    assert official.find_invalid_x_mcp_header(schema) is not None
    assert inbound.find_invalid_x_mcp_header(schema) is not None
    assert inbound.find_invalid_x_mcp_header(SCHEMA) is None


def test_a_server_accepts_the_headers_they_build(serve_http: Callable[..., str]) -> None:
    mcp: MCPServer[Any] = MCPServer("routed")

    @mcp.tool()
    def route(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return f"routed to {region}"

    url = serve_http(mcp)
    schema = mcp.list_tools()[0].input_schema
    params = {"name": "route", "arguments": {"region": "zürich"}}
    headers = {"Mcp-Name": inbound.encode_header_value("route"),
               **inbound.mcp_param_headers(inbound.x_mcp_header_map(schema), params["arguments"])}
    assert headers["Mcp-Param-Region"].startswith("=?base64?")
    response, _ = modern_post(url, "tools/call", params, headers=headers)
    assert response.status_code == 200, response.text
    assert "routed to zürich" in response.text
    headers["Mcp-Param-Region"] = inbound.encode_header_value("bern")
    refused, _ = modern_post(url, "tools/call", params, headers=headers)
    assert refused.status_code == 400
