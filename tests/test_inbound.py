"""``minimcp.shared.inbound``: the official names for the 2026-07-28 request ladder and header vocabulary.

Headers built with them are what the official SDK builds, requests are classified as it classifies
them (both checked against ``mcp.shared.inbound`` itself), and a minimcp server over real HTTP
accepts a call that carries them and answers a refusal with the status the one table gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import mcp.shared.inbound as official
import pytest
from pydantic import Field

from conftest import modern_headers, modern_meta, modern_post, request_message, post
from minimcp.server import MCPServer, Server
from minimcp.shared.exceptions import MCPError
from minimcp.types import INVALID_PARAMS, CallToolResult, ListToolsResult, Tool
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


V = "io.modelcontextprotocol/protocolVersion"
C = "io.modelcontextprotocol/clientCapabilities"
ENVELOPE = {V: "2026-07-28", C: {}}
LADDER = [
    ({"method": "tools/list", "params": {"_meta": ENVELOPE}}, None),
    ({"method": "tools/list"}, None),
    ({"method": "tools/list", "params": {"_meta": {V: "2026-07-28"}}}, None),
    ({"method": "tools/list", "params": {"_meta": {V: 7, C: {}}}}, None),
    ({"method": "tools/list", "params": {"_meta": {V: "2099-01-01", C: {}}}}, None),
    ({"method": "tools/list", "params": {"_meta": ENVELOPE}}, {"mcp-method": "tools/list"}),
    ({"method": "tools/list", "params": {"_meta": ENVELOPE}},
     {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}),
    ({"method": "tools/call", "params": {"name": "a b", "_meta": ENVELOPE}},
     {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "=?base64?YSBi?="}),
    ({"method": "tools/call", "params": {"name": "a", "_meta": ENVELOPE}},
     {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "b"}),
    ({"method": "tools/list", "params": {"_meta": {V: "2099-01-01", C: {}}}},
     {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}),
]


def _outcome(route: Any) -> tuple[Any, ...]:
    if isinstance(route, (official.InboundModernRoute, inbound.InboundModernRoute)):
        return ("route", route.protocol_version, route.client_info, route.client_capabilities)
    return ("refused", route.code, route.data)


@pytest.mark.parametrize(("body", "headers"), LADDER)
def test_requests_are_classified_as_the_official_sdk_classifies_them(body: dict[str, Any],
                                                                       headers: dict[str, str] | None) -> None:
    assert _outcome(inbound.classify_inbound_request(body, headers=headers)) == _outcome(
        official.classify_inbound_request(body, headers=headers))


def test_the_status_table_and_the_helpers_are_the_official_ones() -> None:
    assert dict(inbound.ERROR_CODE_HTTP_STATUS) == dict(official.ERROR_CODE_HTTP_STATUS)
    lines = [("Mcp-Method", "a"), ("mcp-method", "b")]
    assert inbound.find_duplicated_routing_header(lines) == official.find_duplicated_routing_header(lines)
    assert inbound.unsupported_protocol_version_rejection("2026-07-28") is None
    assert inbound.unsupported_protocol_version_rejection("1999").data == official.unsupported_protocol_version_rejection(
        "1999").data


@pytest.mark.parametrize(("arguments", "headers"), [
    ({"region": "eu", "count": 3}, {"Mcp-Param-Region": "eu", "Mcp-Param-Count": "3"}),
    ({"region": "eu"}, {"Mcp-Param-Region": "us"}),
    ({"region": "eu"}, {}),
    ({}, {"Mcp-Param-Region": "eu"}),
    ({"count": 3}, {"Mcp-Param-Count": "3.0"}),
    ({"urgent": True}, {"Mcp-Param-Urgent": "true"}),
    ({"region": "héllo"}, {"Mcp-Param-Region": "=?base64?aMOpbGxv?="}),
    ({"region": "eu"}, {"Mcp-Param-Region": "=?base64?!!?="}),
])
def test_param_headers_are_refused_where_the_official_sdk_refuses_them(arguments: dict[str, Any],
                                                                        headers: dict[str, str]) -> None:
    ours = inbound.validate_mcp_param_headers(SCHEMA, arguments, headers)
    theirs = official.validate_mcp_param_headers(SCHEMA, arguments, headers)
    assert (ours is None, ours and ours.code) == (theirs is None, theirs and theirs.code)


def test_a_handler_error_travels_with_the_status_of_the_one_table(serve_http: Callable[..., str]) -> None:
    def call_tool(ctx: Any, params: Any) -> CallToolResult:
        raise MCPError(INVALID_PARAMS, "no such widget")

    def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[Tool(name="widget", input_schema={"type": "object"})])

    url = serve_http(Server("table", on_call_tool=call_tool, on_list_tools=list_tools))
    answer, _ = modern_post(url, "tools/call", {"name": "widget", "arguments": {}})
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, INVALID_PARAMS)
    message = request_message("tools/list", {"_meta": modern_meta()})
    refused = post(url, message, headers={**modern_headers("tools/list"), "MCP-Protocol-Version": "2025-11-25"})
    assert refused.status_code == 400
