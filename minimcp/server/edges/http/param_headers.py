"""The ``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call`` over Streamable HTTP, checked against the
called tool's schema.

Each argument whose schema carries ``"x-mcp-header": "{Name}"`` travels again as ``Mcp-Param-{Name}``
so that intermediaries can route on headers without reading bodies; the rule itself is
``minimcp.shared.inbound.validate_mcp_param_headers`` (the routing headers ``Mcp-Method`` and
``Mcp-Name`` are a rung of its ``classify_inbound_request``). This module only finds the schema; the
exchange runs it once the core has accepted the envelope, so the core never reads HTTP headers for
it. Any disagreement is -32020 (which ``errors.http_status`` answers with 400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from minimcp.jsonrpc import MCPError, Message
from minimcp.shared.inbound import validate_mcp_param_headers

if TYPE_CHECKING:
    from minimcp.server.core.dispatch import ServedServer


def check_param_headers(message: Message, headers: Mapping[str, str], server: ServedServer) -> None:
    """Refuse a ``tools/call`` whose ``Mcp-Param-*`` headers disagree with its arguments."""
    if message.get("method") != "tools/call":
        return
    params = message.get("params") or {}
    name = params.get("name")
    lookup = server.hooks.get_tool_input_schema
    schema = lookup(name) if lookup is not None and isinstance(name, str) else None
    arguments = params.get("arguments") or {}
    if schema is None or not isinstance(arguments, dict):
        return
    refused = validate_mcp_param_headers(schema, arguments, headers)
    if refused is not None:
        raise MCPError(refused.code, refused.message)
