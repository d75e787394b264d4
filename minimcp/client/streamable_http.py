"""Streamable HTTP for the client: the transport factory and the 2026-07-28 request-header rules.

``streamable_http_client(url)`` is what ``Client("http://...")`` uses. Headers, cookies, proxies,
TLS and authentication are configured on a ``requests.Session`` you pass as ``http_client``::

    http = requests.Session()
    http.headers["Authorization"] = "Bearer ..."
    with Client(streamable_http_client(url, http_client=http)) as client:
        ...

The header rules live here because only HTTP carries them: ``Mcp-Name`` and ``Mcp-Param-{Name}``
values are sent as plain text when they are safe header text, else as ``=?base64?...?=``; a tool
whose ``x-mcp-header`` annotations break the rules is one a client must not call.
"""

from __future__ import annotations

import re
from typing import Any

import requests
import requests.auth

from minimcp.client.transports import DEFAULT_MAX_SSE_EVENT_SIZE, HttpTransport
from minimcp.shared.header_values import encode_header_value

#: RFC 9110 token characters, the only ones an ``x-mcp-header`` name may use.
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_HEADER_TYPES = ("string", "integer", "boolean")
_MAX_SAFE_INTEGER = 2**53 - 1


def streamable_http_client(
    url: str,
    http_client: requests.Session | None = None,
    terminate_on_close: bool = True,
    auth: requests.auth.AuthBase | None = None,
    max_sse_event_size: int | None = DEFAULT_MAX_SSE_EVENT_SIZE,
) -> HttpTransport:
    """A Streamable HTTP transport to ``url``: ``Client(...)`` takes it, or ``with ... as (read, write)``.

    The session is DELETEd on close unless told otherwise. ``auth`` (an
    :class:`~minimcp.client.auth.OAuthClientProvider`, or any ``requests`` auth) signs every request
    this transport makes; one SSE event larger than ``max_sse_event_size`` bytes (``None``: no limit)
    fails the request it belongs to.
    """
    return HttpTransport(
        url, http_client=http_client, terminate_on_close=terminate_on_close, auth=auth,
        max_sse_event_size=max_sse_event_size,
    )


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


__all__ = ["encode_header_value", "header_parameters", "streamable_http_client"]
