"""The 2026-07-28 Streamable HTTP header values, both directions: what a body value looks like as a
header, and back.

``Mcp-Name`` repeats the request's target (the parameter ``TARGET_PARAMS`` names) and
``Mcp-Param-{Name}`` an annotated argument. A value that is not plain header text (non-ASCII,
control characters, surrounding white space, or text that itself looks like the sentinel) travels
as ``=?base64?<UTF-8 in Base64>?=``. The client encodes, the server decodes, with this one rule.
Which arguments may travel as headers at all is ``header_parameters``: the ``x-mcp-header`` rules.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from minimcp.types.methods import METHODS

#: Method -> the params field ``Mcp-Name`` repeats: the method table's ``target`` column.
TARGET_PARAMS = {row.name: row.target for row in METHODS.values() if row.target is not None}

#: RFC 9110 token characters, the only ones an ``x-mcp-header`` name may use.
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_HEADER_TYPES = ("string", "integer", "boolean")
_MAX_SAFE_INTEGER = 2**53 - 1

_PREFIX = "=?base64?"
_SUFFIX = "?="


class HeaderValueError(ValueError):
    """A header value that is not plain header text or carries broken Base64."""


def header_text(value: Any) -> str | None:
    """A body value as the text its header compares with (``None``: no header)."""
    if value is None:
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def encode_header_value(value: Any) -> str | None:
    """A body value as header text, or ``None`` when the header must be omitted (null/absent)."""
    text = header_text(value)
    if text is None:
        return None
    if _needs_base64(text):
        return _PREFIX + base64.b64encode(text.encode("utf-8")).decode("ascii") + _SUFFIX
    return text


def _needs_base64(text: str) -> bool:
    if any(ord(c) < 0x20 or ord(c) > 0x7E for c in text) or text != text.strip():
        return True
    return text.startswith(_PREFIX) and text.endswith(_SUFFIX)


def decode_header_value(raw: str, header: str) -> str:
    """A received header value with optional white space trimmed and the Base64 sentinel decoded."""
    value = raw.strip(" \t")
    if not (value.isascii() and value.isprintable()):  # printable ASCII is exactly 0x20-0x7E
        raise HeaderValueError(f"{header} header holds characters that are not plain header text")
    if value.startswith(_PREFIX) and value.endswith(_SUFFIX) and len(value) >= len(_PREFIX + _SUFFIX):
        try:
            return base64.b64decode(value[len(_PREFIX):-len(_SUFFIX)], validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise HeaderValueError(f"{header} header has invalid Base64") from None
    return value


def header_parameters(input_schema: dict[str, Any]) -> dict[str, str]:
    """Map each annotated top-level argument to its header name (``region`` -> ``Region``).

    Raises ``ValueError`` naming the first rule an annotation breaks. Annotations anywhere but a
    direct property of the root schema make the tool invalid too: a header cannot mirror a value
    inside an array, a branch or a reference.
    """
    properties = input_schema.get("properties")
    found: dict[str, str] = {}
    seen: set[str] = set()
    if isinstance(properties, dict):
        for argument, schema in properties.items():
            if not isinstance(schema, dict) or "x-mcp-header" not in schema:
                _reject_nested(schema, f"properties.{argument}")
                continue
            name = schema["x-mcp-header"]
            if not isinstance(name, str) or not name:
                raise ValueError(f"argument {argument!r}: x-mcp-header must be a non-empty string")
            if not _TOKEN.match(name):
                raise ValueError(f"argument {argument!r}: x-mcp-header {name!r} is not an HTTP token")
            if name.lower() in seen:
                raise ValueError(f"argument {argument!r}: x-mcp-header {name!r} is used twice")
            if schema.get("type") not in _HEADER_TYPES:
                raise ValueError(f"argument {argument!r}: x-mcp-header needs a string, integer or boolean type")
            _reject_nested({k: v for k, v in schema.items() if k != "x-mcp-header"}, f"properties.{argument}")
            seen.add(name.lower())
            found[argument] = name
    _reject_nested({k: v for k, v in input_schema.items() if k != "properties"}, "schema")
    _check_integer_bounds(input_schema, found)
    return found


def _reject_nested(node: Any, where: str) -> None:
    if isinstance(node, dict):
        if "x-mcp-header" in node:
            raise ValueError(f"x-mcp-header at {where} is not a top-level argument")
        for key, child in node.items():
            _reject_nested(child, f"{where}.{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            _reject_nested(child, f"{where}[{index}]")


def _check_integer_bounds(input_schema: dict[str, Any], found: dict[str, str]) -> None:
    for argument in found:
        schema = input_schema["properties"][argument]
        if schema.get("type") != "integer":
            continue
        for bound in ("minimum", "maximum"):
            value = schema.get(bound)
            if isinstance(value, (int, float)) and abs(value) > _MAX_SAFE_INTEGER:
                raise ValueError(f"argument {argument!r}: {bound} is outside the safe integer range")
