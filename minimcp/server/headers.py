"""The request headers of the 2026-07-28 Streamable HTTP binding, checked against the body.

``Mcp-Method`` must repeat the method, ``Mcp-Name`` the tool/prompt name or resource URI, and
``Mcp-Param-{Name}`` each tool argument whose schema carries ``"x-mcp-header": "{Name}"``, so that
intermediaries can route on headers without reading bodies. Values that are not plain header text
travel as ``=?base64?...?=``. Any disagreement is -32020 with HTTP 400.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from minimcp.jsonrpc import EnvelopeError, Message
from minimcp.shared.tasks import TASK_METHODS
from minimcp.types import HEADER_MISMATCH

if TYPE_CHECKING:
    from minimcp.server.lowlevel.server import Server

_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
          **{method: "taskId" for method in TASK_METHODS}}


def _mismatch(text: str) -> EnvelopeError:
    return EnvelopeError(400, HEADER_MISMATCH, text)


def decode_value(raw: str, header: str) -> str:
    """A header value with optional white space trimmed and the Base64 sentinel decoded."""
    value = raw.strip(" \t")
    if not (value.isascii() and value.isprintable()):  # printable ASCII is exactly 0x20-0x7E
        raise _mismatch(f"{header} header holds characters that are not plain header text")
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= len("=?base64??="):
        encoded = value[len("=?base64?"):-len("?=")]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise _mismatch(f"{header} header has invalid Base64") from None
    return value


def _expected_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _same(header_value: str, body_value: Any) -> bool:
    if isinstance(body_value, int) and not isinstance(body_value, bool):
        try:
            return int(header_value) == body_value
        except ValueError:
            return False
    return header_value == _expected_text(body_value)


def check_headers(message: Message, headers: Mapping[str, str], server: Server[Any]) -> None:
    method = message.get("method")
    raw_method = headers.get("mcp-method")
    if raw_method is None:
        raise _mismatch("Missing Mcp-Method header")
    if raw_method.strip(" \t") != method:
        raise _mismatch(f"Mcp-Method header {raw_method.strip()!r} does not match the method {method!r}")
    field = _NAMED.get(method)  # type: ignore[arg-type]
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
