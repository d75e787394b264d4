"""The request headers of the 2026-07-28 Streamable HTTP binding, checked against the body.

``Mcp-Method`` must repeat the method, ``Mcp-Name`` the tool/prompt name or resource URI, and
``Mcp-Param-{Name}`` each tool argument whose schema carries ``"x-mcp-header": "{Name}"``, so that
intermediaries can route on headers without reading bodies. Values that are not plain header text
travel as ``=?base64?...?=``. Any disagreement is -32020 (which the HTTP edge answers with 400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from minimcp.jsonrpc import MCPError, Message
from minimcp.shared.header_values import TARGET_PARAMS, HeaderValueError, decode_header_value, header_text
from minimcp.types import HEADER_MISMATCH

if TYPE_CHECKING:
    from minimcp.server.lowlevel.server import Server


def _mismatch(text: str) -> MCPError:
    return MCPError(HEADER_MISMATCH, text)


def decode_value(raw: str, header: str) -> str:
    try:
        return decode_header_value(raw, header)
    except HeaderValueError as bad:
        raise _mismatch(str(bad)) from None


def _same(header_value: str, body_value: Any) -> bool:
    if isinstance(body_value, int) and not isinstance(body_value, bool):
        try:
            return int(header_value) == body_value
        except ValueError:
            return False
    return header_value == header_text(body_value)


def check_headers(message: Message, headers: Mapping[str, str], server: Server[Any]) -> None:
    method = message.get("method")
    raw_method = headers.get("mcp-method")
    if raw_method is None:
        raise _mismatch("Missing Mcp-Method header")
    if raw_method.strip(" \t") != method:
        raise _mismatch(f"Mcp-Method header {raw_method.strip()!r} does not match the method {method!r}")
    field = TARGET_PARAMS.get(method)  # type: ignore[arg-type]
    if field is None:
        return
    params = message.get("params") or {}
    raw_name = headers.get("mcp-name")
    if raw_name is None:
        raise _mismatch("Missing Mcp-Name header")
    if decode_value(raw_name, "Mcp-Name") != params.get(field):
        raise _mismatch(f"Mcp-Name header does not match params.{field}")
    if method == "tools/call":
        _check_params(server, params, headers)


def _check_params(server: Server[Any], params: dict[str, Any], headers: Mapping[str, str]) -> None:
    name = params.get("name")
    lookup = server.get_tool_input_schema
    schema_of_tool = lookup(name) if lookup is not None and isinstance(name, str) else None
    arguments = params.get("arguments") or {}
    if schema_of_tool is None or not isinstance(arguments, dict):
        return
    for prop, schema in (schema_of_tool.get("properties") or {}).items():
        name = schema.get("x-mcp-header") if isinstance(schema, dict) else None
        if not isinstance(name, str) or arguments.get(prop) is None:
            continue
        header = f"Mcp-Param-{name}"
        raw = headers.get(header)
        if raw is None:
            raise _mismatch(f"Missing {header} header for argument {prop!r}")
        if not _same(decode_value(raw, header), arguments[prop]):
            raise _mismatch(f"{header} header does not match argument {prop!r}")
