"""The 2026-07-28 HTTP header vocabulary under the official SDK's names (``mcp.shared.inbound``).

The rules themselves live in ``minimcp.shared.header_values`` (the value codec and the
``x-mcp-header`` annotation rules, shared by client and server); this module names them as the
official SDK does, for code that builds or checks these headers itself. The request ladder
(``classify_inbound_request``) and the error-code-to-HTTP-status table are not offered here: in
minimcp they are the dispatcher's ``modern_session`` and the HTTP edge's ``http_status``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from minimcp.shared.header_values import (
    TARGET_PARAMS,
    HeaderValueError,
    decode_header_value as _decode,
    encode_header_value as _encode,
    header_parameters,
    header_text,
)

MCP_PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
MCP_METHOD_HEADER: Final = "mcp-method"
MCP_NAME_HEADER: Final = "mcp-name"
MCP_PARAM_HEADER_PREFIX: Final = "Mcp-Param-"
#: The JSON Schema annotation that names the ``Mcp-Param-*`` header an argument travels in.
X_MCP_HEADER_KEY: Final = "x-mcp-header"

#: Method -> the params key ``Mcp-Name`` repeats (the core methods; the tasks extension adds its own).
NAME_BEARING_METHODS: Final[Mapping[str, str]] = MappingProxyType(
    {method: TARGET_PARAMS[method] for method in ("tools/call", "prompts/get", "resources/read")})


def encode_header_value(value: str) -> str:
    """``value`` as header text: verbatim when it is safe header text, else ``=?base64?...?=``."""
    encoded = _encode(value)
    assert encoded is not None  # only None encodes to None
    return encoded


def decode_header_value(value: str | None) -> str | None:
    """A received header value decoded; ``None`` for ``None`` and for a value that is not valid
    header text or carries broken Base64, so a corrupt header never matches a body value."""
    if value is None:
        return None
    try:
        return _decode(value, "header")
    except HeaderValueError:
        return None


def find_invalid_x_mcp_header(input_schema: Any) -> str | None:
    """Why a tool's ``x-mcp-header`` annotations break the rules (a client must not call it), or ``None``."""
    if not isinstance(input_schema, dict):
        return None
    try:
        header_parameters(input_schema)
    except ValueError as broken:
        return str(broken)
    return None


def x_mcp_header_map(input_schema: Any) -> dict[tuple[str, ...], str]:
    """Each annotated argument's path (one name: annotations sit on top-level arguments) -> its header token."""
    return {(argument,): token for argument, token in header_parameters(input_schema).items()}


def mcp_param_headers(header_map: Mapping[tuple[str, ...], str], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a ``tools/call`` with ``arguments`` carries; absent and null
    arguments (and values with no header form) send none."""
    headers: dict[str, str] = {}
    for path, token in header_map.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        text = header_text(value) if isinstance(value, (str, int, float, bool)) else None
        if text is not None:
            headers[f"{MCP_PARAM_HEADER_PREFIX}{token}"] = encode_header_value(text)
    return headers


__all__ = [
    "MCP_METHOD_HEADER",
    "MCP_NAME_HEADER",
    "MCP_PARAM_HEADER_PREFIX",
    "MCP_PROTOCOL_VERSION_HEADER",
    "NAME_BEARING_METHODS",
    "X_MCP_HEADER_KEY",
    "decode_header_value",
    "encode_header_value",
    "find_invalid_x_mcp_header",
    "mcp_param_headers",
    "x_mcp_header_map",
]
