"""The operations of an OpenAPI document as tools: their arguments, and the request a call makes.

A caller's argument fills a parameter's value and nothing else: a path value is one percent-encoded
segment and may not be a dot segment (or empty), a header value is one line of text, a cookie value
holds only the characters RFC 6265 gives cookie values, and server variables come from the spec's
defaults or the operator's ``server_variables``, never from a call. Which URL a request goes to is
the exchange's to check (``exchange``); here the spec's paths are checked once, at registration.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, TypeVar
from urllib.parse import quote, unquote

import requests

from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import ToolError
from minimcp.server.app.generated import Argument, http_answer, tool_function
from minimcp.server.app.openapi.exchange import Base, Exchange, ExchangeError, has_dot_segment
from minimcp.server.app.openapi.spec import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, Refs, SchemaTooLarge, load_spec, server_url
from minimcp.types import ToolAnnotations

#: The largest answer a tool reads by default (``max_answer_bytes=``); a model reads far less.
MAX_ANSWER_BYTES = 4 * 1024 * 1024

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                          "object": dict}
_LOCATIONS = ("path", "query", "header", "cookie")
#: Header parameters that are not arguments: the three OpenAPI says to ignore, and those the
#: exchange itself owns (where it goes, how its body is framed, the operator's cookies).
_OWNED_HEADERS = frozenset({"accept", "content-type", "authorization", "host", "cookie", "content-length",
                            "transfer-encoding", "connection"})
#: A spec path: ``/``, then path characters (RFC 3986 pchar, template braces, any non-ASCII letter
#: requests will encode); no ``?``, ``#``, ``\`` or white space, which would end or bend the path.
_SPEC_PATH = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@%/{}\u00a1-\U0010ffff]*")
_TEMPLATE = re.compile(r"\{([^{}]+)\}")
#: RFC 9110 token characters: what a header or cookie name may hold.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: RFC 6265 cookie-octets: no white space, DQUOTE, comma, semicolon, backslash or control character.
_COOKIE_VALUE = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
#: A header value: one line of Latin-1 text without control characters.
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\xa0-\xff]*")


class ToolServer(Protocol):
    """A server the operations become tools of (an ``MCPServer``), built by name."""

    def __init__(self, name: str | None = None, **options: Any) -> None: ...

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, *,
                 annotations: ToolAnnotations | None = None) -> None: ...


ServerT = TypeVar("ServerT", bound=ToolServer)


@dataclass(frozen=True)
class OperationFilter:
    """Which operations become tools: all of them unless ``tags``, ``operation_ids`` or ``methods``
    narrow it; ``exclude_tags`` and ``exclude_operation_ids`` take some away."""

    tags: Collection[str] | None = None
    operation_ids: Collection[str] | None = None
    methods: Collection[str] | None = None
    exclude_tags: Collection[str] = ()
    exclude_operation_ids: Collection[str] = ()

    def admits(self, method: str, operation: Mapping[str, Any], operation_id: str) -> bool:
        tags = set(operation.get("tags") or ())
        if self.tags is not None and not tags & set(self.tags):
            return False
        if self.operation_ids is not None and operation_id not in self.operation_ids:
            return False
        if self.methods is not None and method not in {m.lower() for m in self.methods}:
            return False
        return not (tags & set(self.exclude_tags)) and operation_id not in self.exclude_operation_ids


def from_openapi(cls: type[ServerT], spec: Mapping[str, Any] | str | Path, *, name: str | None = None,
                 base_url: str | None = None, session: requests.Session | None = None,
                 auth: requests.auth.AuthBase | None = None, timeout: float = 30.0, excerpt: int = 2000,
                 max_answer_bytes: int = MAX_ANSWER_BYTES, server_variables: Mapping[str, str] | None = None,
                 tags: Collection[str] | None = None, operation_ids: Collection[str] | None = None,
                 methods: Collection[str] | None = None, exclude_tags: Collection[str] = (),
                 exclude_operation_ids: Collection[str] = (), **options: Any) -> ServerT:
    """``MCPServer.from_openapi``: a server named for the spec's ``info.title`` unless ``name``
    says otherwise, its tools the admitted operations; other keywords configure the server."""
    session = session or requests.Session()
    document, source = load_spec(spec, session, timeout)
    mcp = cls(name or str((document.get("info") or {}).get("title") or "openapi"), **options)
    add_openapi_tools(mcp, document, base_url=server_url(document, base_url, source, server_variables, optional=True),
                      session=session, auth=auth, timeout=timeout, excerpt=excerpt, max_answer_bytes=max_answer_bytes,
                      select=OperationFilter(tags, operation_ids, methods, exclude_tags, exclude_operation_ids))
    return mcp


def add_openapi_tools(mcp: ToolServer, spec: Mapping[str, Any] | str | Path, *, base_url: str | None = None,
                      session: requests.Session | None = None, auth: requests.auth.AuthBase | None = None,
                      timeout: float = 30.0, excerpt: int = 2000, max_answer_bytes: int = MAX_ANSWER_BYTES,
                      server_variables: Mapping[str, str] | None = None, select: OperationFilter = OperationFilter(),
                      allowed: Callable[[Any], bool] | None = None, requirement: str | None = None) -> list[str]:
    """Register one tool on ``mcp`` per operation of ``spec`` that ``select`` admits; their names.
    On a server inside a web application (``minimcp.flask.MCP``, ``minimcp.django.MCP``)
    ``allowed`` limits who sees and calls them, as ``@mcp.tool(allowed=...)`` does."""
    access: dict[str, Any] = {}
    if allowed is not None:
        # A server that knows its users takes a rule with each tool (``HostedServer.add_tool``).
        if "allowed" not in inspect.signature(mcp.add_tool).parameters:
            raise TypeError("allowed= needs a server that knows its users (minimcp.flask.MCP, minimcp.django.MCP)")
        access = {"allowed": allowed, "requirement": requirement}
    session = session or requests.Session()
    document, source = load_spec(spec, session, timeout)
    if not str(document.get("openapi", "")).startswith("3"):
        raise ValueError("from_openapi reads OpenAPI 3 documents (an 'openapi: 3.x' field); "
                         f"this one says {document.get('openapi') or document.get('swagger')!r}")
    exchange = Exchange(Base.parse(str(server_url(document, base_url, source, server_variables))), session, auth,
                        timeout, max_answer_bytes, "max_answer_bytes")
    refs = Refs(document)
    calls: list[tuple[str, _Operation]] = []
    too_large: dict[str, str] = {}
    for path, item in (document.get("paths") or {}).items():
        item = refs.resolve(item)
        shared = item.get("parameters") or []
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            operation_id = operation.get("operationId") or f"{method}_{path}"
            if not select.admits(method, operation, operation_id):
                continue
            _check_path(path)
            try:
                calls.append((operation_id, _Operation(exchange, path, method, operation, shared, refs, excerpt)))
            except SchemaTooLarge as grows:
                too_large[operation_id] = f"{method.upper()} {path} ({grows})"
    if too_large:
        raise ValueError(f"The OpenAPI spec is refused: the schemas of {', '.join(too_large.values())} grow past "
                         f"{MAX_SCHEMA_NODES:,} nodes or {MAX_SCHEMA_DEPTH} levels once their $refs are inlined; "
                         f"leave them out with exclude_operation_ids={list(too_large)!r}")
    for operation_id, call in calls:
        mcp.add_tool(call.function(_tool_name(operation_id)), annotations=call.hints(), **access)
    return [_tool_name(operation_id) for operation_id, _ in calls]


def _check_path(path: str) -> None:
    """Refuse a spec path that is not one under the base URL: a spec names operations, never hosts."""
    if not _SPEC_PATH.fullmatch(path) or has_dot_segment(path):
        raise ValueError(f"The OpenAPI spec's path {path!r} is refused: a path starts with '/' and holds no '?', '#', "
                         "'\\', white space or '.'/'..' segment, so that it stays under the base URL (a spec names "
                         "operations, never hosts)")


class _Operation:
    """One operation: its arguments, and the request a call makes."""

    def __init__(self, exchange: Exchange, path: str, method: str, operation: Mapping[str, Any], shared: list[Any],
                 refs: Refs, excerpt: int) -> None:
        self.exchange, self.path, self.method, self.operation, self.excerpt = exchange, path, method, operation, excerpt
        own = [refs.resolve(p) for p in operation.get("parameters") or []]
        keys = {(p.get("name"), p.get("in")) for p in own}
        declared = [p for p in (refs.resolve(p) for p in shared) if (p.get("name"), p.get("in")) not in keys] + own
        self.parameters = [{**p, "schema": refs.inline(p.get("schema") or {})} for p in declared
                           if p.get("in") in _LOCATIONS
                           and not (p.get("in") == "header" and str(p.get("name")).lower() in _OWNED_HEADERS)]
        for parameter in self.parameters:
            if parameter["in"] in ("header", "cookie") and not _TOKEN.fullmatch(str(parameter.get("name"))):
                raise ValueError(f"{method.upper()} {path}: its {parameter['in']} parameter {parameter.get('name')!r} is not "
                                 "a name HTTP allows (RFC 9110 token characters)")
        self.body_schema = self._body(refs)

    def _body(self, refs: Refs) -> dict[str, Any] | None:
        body = refs.resolve(self.operation.get("requestBody") or {})
        content = body.get("content") or {}
        media = next((c for t, c in content.items() if "json" in t), None)
        if media is None:
            return None
        schema = refs.inline(media.get("schema") or {})
        return {"schema": schema, "required": bool(body.get("required"))}

    def arguments(self) -> tuple[list[Argument], bool]:
        """The tool's arguments, and whether the body's properties are arguments of their own
        (else one ``body`` argument holds it)."""
        arguments = [self._parameter(p) for p in self.parameters]
        taken = {a.name for a in arguments}
        if self.body_schema is None:
            return arguments, False
        schema = self.body_schema["schema"]
        properties = schema.get("properties") if schema.get("type", "object") == "object" else None
        if properties and not taken & set(properties):
            required = set(schema.get("required") or ()) if self.body_schema["required"] else set()
            for name, prop in properties.items():
                if prop.get("readOnly"):
                    continue
                arguments.append(_argument(name, prop, name in required, prop.get("description")))
            return arguments, True
        if "body" in taken:
            raise ValueError(f"{self.method.upper()} {self.path}: a parameter is named 'body' and the request "
                             "body is not an object with properties of other names")
        arguments.append(_argument("body", schema, self.body_schema["required"], "The request body (JSON)"))
        return arguments, False

    def function(self, name: str) -> Any:
        arguments, spread = self.arguments()
        locations = {p["name"]: p["in"] for p in self.parameters}

        def body(values: dict[str, Any], ctx: Context) -> str:
            given = {key: value for key, value in values.items() if value is not None}
            parts: dict[str, dict[str, Any]] = {location: {} for location in _LOCATIONS}
            for key, value in list(given.items()):
                if key in locations:
                    parts[locations[key]][key] = given.pop(key)
            payload = given if spread else given.get("body")
            return self._send(parts, payload if self.body_schema is not None else None)

        summary = " ".join(str(self.operation.get(k) or "") for k in ("summary", "description")).strip()
        description = f"{self.method.upper()} {self.path}" + (f": {summary}" if summary else "")
        return tool_function(name, arguments, body, description=description)

    def _send(self, parts: dict[str, dict[str, Any]], payload: Any) -> str:
        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            return _path_value(name, parts["path"][name]) if name in parts["path"] else match.group(0)

        path = _TEMPLATE.sub(fill, self.path)
        try:
            answer = self.exchange.send(self.method, self.exchange.base.url + path, params=parts["query"],
                                        headers={k: _header_value(k, v) for k, v in parts["header"].items()},
                                        cookies={k: _cookie_value(k, v) for k, v in parts["cookie"].items()},
                                        payload=payload)
        except ExchangeError as failed:
            raise ToolError(str(failed)) from None
        return http_answer(answer.request, answer.status, answer.reason, answer.text, self.excerpt)

    def hints(self) -> ToolAnnotations:
        return ToolAnnotations(title=self.operation.get("summary"), read_only_hint=self.method in ("get", "head"),
                               destructive_hint=self.method in ("put", "patch", "delete"),
                               idempotent_hint=self.method in ("get", "head", "put", "delete"), open_world_hint=True)

    def _parameter(self, parameter: Mapping[str, Any]) -> Argument:
        required = bool(parameter.get("required")) or parameter.get("in") == "path"
        return _argument(parameter["name"], parameter["schema"], required, parameter.get("description"))


def _path_value(name: str, value: Any) -> str:
    """A path value as one segment that stays where the spec put it."""
    text = str(value)
    if unquote(text) in ("", ".", ".."):
        raise ToolError(f"The path parameter {name!r} may not be {text!r}: as a path segment it would move the "
                        "request to another path; give the value the API names the item by")
    return quote(text, safe="")


def _header_value(name: str, value: Any) -> str:
    text = str(value)
    if not _HEADER_VALUE.fullmatch(text) or text != text.strip():
        raise ToolError(f"The header parameter {name!r} takes one line of text without control characters or "
                        "surrounding white space")
    return text


def _cookie_value(name: str, value: Any) -> str:
    text = str(value)
    if not _COOKIE_VALUE.fullmatch(text):
        raise ToolError(f"The cookie parameter {name!r} may not hold white space, control characters, quotes, "
                        "';', ',' or '\\': a cookie value holds only what RFC 6265 allows it")
    return text


def _argument(name: str, schema: Mapping[str, Any], required: bool, description: str | None) -> Argument:
    schema = dict(schema)
    kind = schema.get("type")
    annotation: Any = _TYPES.get(kind, Any) if isinstance(kind, str) else Any
    if schema.pop("nullable", False):  # OpenAPI 3.0's spelling of JSON Schema's null type
        annotation = Optional[annotation]
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
    if not required:
        annotation = Optional[annotation]
    return Argument(name, annotation, ... if required else None, description or schema.get("description"), schema)


def _tool_name(operation_id: str) -> str:
    """A tool name from an operation id (letters, digits, ``_``, ``-`` and ``.``, at most 128)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", operation_id).strip("_")[:128] or "operation"
