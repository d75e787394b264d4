"""The 2026-07-28 request ladder and header vocabulary, both directions, under the official SDK's
names (``mcp.shared.inbound``, which keeps them in one module too).

Pure: no I/O. ``classify_inbound_request`` runs the envelope rungs a self-contained request must
pass (``_meta`` carries the version and the capabilities; over HTTP the routing headers repeat the
body; the version is served), for every transport (``era.arrival``).
``ERROR_CODE_HTTP_STATUS`` is the one table the HTTP edge answers an error code with, whether the
ladder refused the request or a handler failed it.

The header values: ``Mcp-Name`` repeats the request's target (the parameter ``TARGET_PARAMS``
names) and ``Mcp-Param-{Name}`` an annotated argument. A value that is not plain header text
(non-ASCII, control characters, surrounding white space, or text that itself looks like the
sentinel) travels as ``=?base64?<UTF-8 in Base64>?=``. The client encodes (``encoded_header``),
the server decodes (``decoded_header``), with this one rule; ``encode_header_value`` and
``decode_header_value`` are the official SDK's forms of the two. Which arguments may travel as
headers at all is ``header_parameters``: the ``x-mcp-header`` rules.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, TypeGuard

from minimcp.types import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSIONS,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
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


def encoded_header(value: Any) -> str | None:
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


def decoded_header(raw: str, header: str) -> str:
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


MCP_PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
MCP_METHOD_HEADER: Final = "mcp-method"
MCP_NAME_HEADER: Final = "mcp-name"
MCP_PARAM_HEADER_PREFIX: Final = "Mcp-Param-"
#: The JSON Schema annotation that names the ``Mcp-Param-*`` header an argument travels in.
X_MCP_HEADER_KEY: Final = "x-mcp-header"

#: Method -> the params key ``Mcp-Name`` repeats, for the protocol's own methods (the tasks
#: extension's ``taskId`` is checked all the same): the method table's ``target`` column.
NAME_BEARING_METHODS: Final[Mapping[str, str]] = MappingProxyType(
    {row.name: row.target for row in METHODS.values() if row.target is not None and row.extension is None})


def encode_header_value(value: str) -> str:
    """``value`` as header text: verbatim when it is safe header text, else ``=?base64?...?=``."""
    encoded = encoded_header(value)
    assert encoded is not None  # only None encodes to None
    return encoded


def decode_header_value(value: str | None) -> str | None:
    """A received header value decoded; ``None`` for ``None`` and for a value that is not valid
    header text or carries broken Base64, so a corrupt header never matches a body value."""
    if value is None:
        return None
    try:
        return decoded_header(value, "header")
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


#: The HTTP status a 2026-07-28 error answer travels with, by JSON-RPC code, whether the ladder
#: refused the request or a handler failed it; any other code travels with 200 (the error is in
#: the body).
ERROR_CODE_HTTP_STATUS: Final[Mapping[int, int]] = MappingProxyType({
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
})


@dataclass(frozen=True)
class InboundModernRoute:
    """A request whose envelope passed every rung: its version, and the raw ``clientInfo`` (``None``
    when absent) and ``clientCapabilities`` it declared. Whether its method exists is the
    dispatcher's question, not the ladder's."""

    protocol_version: str
    client_info: Any
    client_capabilities: Any


@dataclass(frozen=True)
class InboundLadderRejection:
    """The first rung a request failed, as the fields of its JSON-RPC error."""

    code: int
    message: str
    data: Any = None


_ROUTING_HEADERS: Final = frozenset({MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER})


def find_duplicated_routing_header(headers: Iterable[tuple[str, str]]) -> str | None:
    """The routing header (lowercase) that raw header lines carry twice, or ``None``: readers of the
    first and of the last copy would route one request two ways."""
    seen: set[str] = set()
    for name, _ in headers:
        key = name.lower()
        if key in _ROUTING_HEADERS:
            if key in seen:
                return key
            seen.add(key)
    return None


def unsupported_protocol_version_rejection(
        requested: str, supported_modern_versions: Sequence[str] = MODERN_PROTOCOL_VERSIONS,
) -> InboundLadderRejection | None:
    """The refusal of a version this server does not serve, naming the ones it does; ``None`` if served."""
    if requested in supported_modern_versions:
        return None
    return InboundLadderRejection(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {requested}",
                                  {"supported": list(supported_modern_versions), "requested": requested})


def _routing_mismatch(body: Mapping[str, Any], headers: Mapping[str, str], version: Any) -> str | None:
    """Why the routing headers disagree with the body, or ``None``."""
    header_version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if header_version is None:
        return "Missing MCP-Protocol-Version header"
    if header_version.strip(" \t") != version:
        return f"MCP-Protocol-Version header {header_version.strip()!r} does not match _meta {version!r}"
    method = body.get("method")
    raw_method = headers.get(MCP_METHOD_HEADER)
    if raw_method is None:
        return "Missing Mcp-Method header"
    if raw_method.strip(" \t") != method:
        return f"Mcp-Method header {raw_method.strip()!r} does not match the method {method!r}"
    row = METHODS.get(method) if isinstance(method, str) else None
    field = row.target if row is not None else None  # the tasks extension's too
    if field is None:
        return None
    raw_name = headers.get(MCP_NAME_HEADER)
    if raw_name is None:
        return "Missing Mcp-Name header"
    try:
        name = decoded_header(raw_name, "Mcp-Name")
    except HeaderValueError as bad:
        return str(bad)
    if name != body["params"].get(field):
        return f"Mcp-Name header does not match params.{field}"
    return None


def _is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, asking the ABC only of what is not a plain dict (what JSON
    decodes to), since its check costs several times the plain one."""
    return isinstance(value, dict) or isinstance(value, Mapping)


def classify_inbound_request(
        body: Mapping[str, Any], *, headers: Mapping[str, str] | None = None,
        supported_modern_versions: Sequence[str] = MODERN_PROTOCOL_VERSIONS,
) -> InboundModernRoute | InboundLadderRejection:
    """Run a decoded 2026-07-28 request through the envelope rungs; the first that fails wins.

    1. ``params._meta`` is an object carrying the protocol version and the client capabilities
       (``INVALID_PARAMS``);
    2. with ``headers`` (lowercase names; ``None`` off HTTP): ``MCP-Protocol-Version``, ``Mcp-Method``
       and, for a named target (the tasks extension's ``taskId`` too), ``Mcp-Name`` repeat the body (``HEADER_MISMATCH``), checked before
       the version so a client that contradicts itself is told so;
    3. the version is a string this server serves (``INVALID_PARAMS``, else
       ``UNSUPPORTED_PROTOCOL_VERSION`` with the supported list).
    """
    params = body.get("params")
    meta = params.get("_meta") if _is_mapping(params) else None
    if not _is_mapping(meta):
        return InboundLadderRejection(
            INVALID_PARAMS, f"Missing required _meta with '{META_PROTOCOL_VERSION}' and '{META_CLIENT_CAPABILITIES}'")
    if META_PROTOCOL_VERSION not in meta or META_CLIENT_CAPABILITIES not in meta:
        missing = [key for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if key not in meta]
        return InboundLadderRejection(INVALID_PARAMS, f"_meta is missing {', '.join(repr(key) for key in missing)}")
    version = meta[META_PROTOCOL_VERSION]
    if headers is not None:
        mismatch = _routing_mismatch(body, headers, version)
        if mismatch is not None:
            return InboundLadderRejection(HEADER_MISMATCH, mismatch)
    if not isinstance(version, str):
        return InboundLadderRejection(INVALID_PARAMS, f"_meta must carry '{META_PROTOCOL_VERSION}' as a string")
    return unsupported_protocol_version_rejection(version, supported_modern_versions) or InboundModernRoute(
        version, meta.get(META_CLIENT_INFO), meta[META_CLIENT_CAPABILITIES])


_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def _same(header_value: str, body_value: Any, schema_type: Any) -> bool:
    """Whether a decoded ``Mcp-Param-*`` value repeats its argument: an integer argument compares as
    a number with a plain decimal header (``42`` matches ``42.0``), anything else as header text."""
    integral = isinstance(body_value, int) or (isinstance(body_value, float) and body_value.is_integer())
    if schema_type == "integer" and integral and not isinstance(body_value, bool) and _DECIMAL.match(header_value):
        whole, _, fraction = header_value.partition(".")
        return set(fraction) <= {"0"} and int(whole) == int(body_value)
    return header_value == header_text(body_value)


def annotates_headers(input_schema: Any) -> bool:
    """Whether some top-level argument of a tool's input schema travels again as a header
    (``x-mcp-header``): a server asks this once per tool, not per call."""
    properties = input_schema.get("properties") if isinstance(input_schema, dict) else None
    return isinstance(properties, dict) and any(
        isinstance(schema, dict) and X_MCP_HEADER_KEY in schema for schema in properties.values())


def validate_mcp_param_headers(input_schema: Any, arguments: Mapping[str, Any],
                               headers: Mapping[str, str]) -> InboundLadderRejection | None:
    """Check a ``tools/call``'s ``Mcp-Param-*`` headers against its arguments: each annotated argument
    and its header are present together and equal (a null argument counts as absent), and no header
    is sent twice. A schema whose annotations break the rules checks nothing (a conforming client
    does not call that tool)."""
    if not annotates_headers(input_schema):
        # No annotated argument: nothing to check, and annotations found deeper would break the
        # schema, which checks nothing either. Said first because nearly every tool is so, and
        # ``header_parameters`` walks the whole schema to tell.
        return None
    try:
        annotated = header_parameters(input_schema)
    except ValueError:
        return None
    if not annotated:
        return None
    folded: dict[str, str] = {}
    duplicated: set[str] = set()
    for name, field in headers.items():
        key = name.lower()
        if key in folded:
            duplicated.add(key)
        folded[key] = field
    for argument, token in annotated.items():
        header = f"{MCP_PARAM_HEADER_PREFIX}{token}"
        raw = folded.get(header.lower())
        value = arguments.get(argument)
        if raw is not None and header.lower() in duplicated:
            return InboundLadderRejection(HEADER_MISMATCH, f"{header} header appears more than once")
        if value is None:
            if raw is not None:
                return InboundLadderRejection(HEADER_MISMATCH, f"{header} header is present but argument "
                                                               f"{argument!r} is absent")
            continue
        if raw is None:
            return InboundLadderRejection(HEADER_MISMATCH, f"Missing {header} header for argument {argument!r}")
        try:
            decoded = decoded_header(raw, header)
        except HeaderValueError as bad:
            return InboundLadderRejection(HEADER_MISMATCH, str(bad))
        if not _same(decoded, value, input_schema["properties"][argument].get("type")):
            return InboundLadderRejection(HEADER_MISMATCH, f"{header} header does not match argument {argument!r}")
    return None


__all__ = [
    "ERROR_CODE_HTTP_STATUS",
    "HeaderValueError",
    "InboundLadderRejection",
    "InboundModernRoute",
    "MCP_METHOD_HEADER",
    "MCP_NAME_HEADER",
    "MCP_PARAM_HEADER_PREFIX",
    "MCP_PROTOCOL_VERSION_HEADER",
    "NAME_BEARING_METHODS",
    "TARGET_PARAMS",
    "X_MCP_HEADER_KEY",
    "classify_inbound_request",
    "decode_header_value",
    "decoded_header",
    "encode_header_value",
    "encoded_header",
    "find_duplicated_routing_header",
    "find_invalid_x_mcp_header",
    "header_parameters",
    "header_text",
    "mcp_param_headers",
    "unsupported_protocol_version_rejection",
    "validate_mcp_param_headers",
    "x_mcp_header_map",
]
