"""The ``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call`` over Streamable HTTP, checked against the
called tool's schema.

Each argument whose schema carries ``"x-mcp-header": "{Name}"`` travels again as ``Mcp-Param-{Name}``
so that intermediaries can route on headers without reading bodies; the rule itself is
``minimcp.shared.inbound.validate_mcp_param_headers`` (the routing headers ``Mcp-Method`` and
``Mcp-Name`` are a rung of its ``classify_inbound_request``). The schema is the request's plan's
(``Plan.header_schema``); the exchange runs the check once the core has accepted the envelope, so
the core never reads HTTP headers for it. Any disagreement is -32020 (which ``errors.http_status`` answers with 400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minimcp.jsonrpc import MCPError, Message
from minimcp.shared.inbound import validate_mcp_param_headers

def check_param_headers(message: Message, headers: Mapping[str, str], schema: Mapping[str, Any]) -> None:
    """Refuse a ``tools/call`` whose ``Mcp-Param-*`` headers disagree with its arguments (``schema``:
    the called tool's input schema, from the request's plan)."""
    params = message.get("params") or {}
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        return
    refused = validate_mcp_param_headers(schema, arguments, headers)
    if refused is not None:
        raise MCPError(refused.code, refused.message)
