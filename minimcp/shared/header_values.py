"""The 2026-07-28 Streamable HTTP header values, both directions: what a body value looks like as a
header, and back.

``Mcp-Name`` repeats the request's target (the parameter ``TARGET_PARAMS`` names) and
``Mcp-Param-{Name}`` an annotated argument. A value that is not plain header text (non-ASCII,
control characters, surrounding white space, or text that itself looks like the sentinel) travels
as ``=?base64?<UTF-8 in Base64>?=``. The client encodes, the server decodes, with this one rule.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from minimcp.shared.tasks import TASK_METHODS

#: The params field that names what a request acts on: what ``Mcp-Name`` repeats and what a sealed
#: ``requestState`` is bound to.
TARGET_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                 **{method: "taskId" for method in TASK_METHODS}}

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
