"""An HTTP API described by OpenAPI 3, as MCP tools: one tool per operation.

::

    mcp = MCPServer.from_openapi("https://api.example.com/openapi.json", session=session, tags=["pets"])

Each operation's path, query and header parameters and its JSON request body (its properties, or
one ``body`` argument) make the input schema, ``$ref`` resolved from the spec's components. A call
is one request over ``requests``: through ``session`` (its auth, headers and adapters) or with
``auth=``, bounded by ``timeout``. An answer of 400 or more, or a request that fails, is an error
result with the status and at most ``excerpt`` characters of the body, so a model can read what the
API said and the server keeps serving.

The spec is a dict, a file or a URL, in JSON or in YAML (YAML needs PyYAML: the ``openapi`` extra).

Path values are percent-encoded whole (``a/../b`` stays one segment), and requests go only to
``base_url``: a spec names operations, never hosts.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional
from urllib.parse import quote, urljoin

import requests

from minimcp.server.mcpserver.context import Context
from minimcp.server.mcpserver.exceptions import ToolError
from minimcp.server.mcpserver.generated import Argument, http_answer, tool_function
from minimcp.types import ToolAnnotations

if TYPE_CHECKING:
    from minimcp.server.mcpserver.server import MCPServer

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                          "object": dict}
_LOCATIONS = ("path", "query", "header", "cookie")


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


def load_spec(spec: Mapping[str, Any] | str | Path, session: requests.Session, timeout: float) -> tuple[dict[str, Any], str | None]:
    """The spec as a dict, and the URL it came from (for a relative ``servers`` entry)."""
    if isinstance(spec, Mapping):
        return dict(spec), None
    text = str(spec)
    if re.match(r"https?://", text):
        try:
            answer = session.get(text, timeout=timeout)
            answer.raise_for_status()
        except requests.RequestException as failed:
            raise ValueError(f"Could not read the OpenAPI spec at {text}: {failed}") from None
        return _document(answer.text, f"The OpenAPI spec at {text}"), text
    try:
        written = Path(text).read_text(encoding="utf-8")
    except OSError as failed:
        raise ValueError(f"Could not read the OpenAPI spec {text!r} (a JSON or YAML file, a URL or a dict): "
                         f"{failed}") from None
    return _document(written, f"The OpenAPI spec {text!r}"), None


def _document(text: str, where: str) -> dict[str, Any]:
    """A spec's text as a dict: JSON, else YAML (the form most specs are written in), which needs PyYAML."""
    try:
        document = json.loads(text)
    except ValueError as not_json:
        document = _yaml(text, where, not_json)
    if not isinstance(document, dict):
        raise ValueError(f"{where} is not an OpenAPI document: it holds {type(document).__name__}, not an object")
    return document


def _yaml(text: str, where: str, not_json: ValueError) -> Any:
    try:
        import yaml
    except ImportError:
        raise ValueError(f"{where} is not JSON ({not_json}); if it is YAML, install PyYAML to read it "
                         "(pip install 'minimcp-sync[openapi]')") from None

    class Loader(yaml.SafeLoader):
        """YAML's safe loader, keeping dates as the strings JSON Schema means them to be
        (``format: date`` values, examples): a ``datetime`` in an input schema could not be sent."""

    Loader.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as failed:
        raise ValueError(f"Could not read {where[0].lower()}{where[1:]}: it is neither JSON ({not_json}) "
                         f"nor YAML ({failed})") from None


def from_openapi(cls: type[MCPServer[Any]], spec: Mapping[str, Any] | str | Path, *, name: str | None = None,
                 base_url: str | None = None, session: requests.Session | None = None,
                 auth: requests.auth.AuthBase | None = None, timeout: float = 30.0, excerpt: int = 2000,
                 tags: Collection[str] | None = None, operation_ids: Collection[str] | None = None,
                 methods: Collection[str] | None = None, exclude_tags: Collection[str] = (),
                 exclude_operation_ids: Collection[str] = (), **options: Any) -> MCPServer[Any]:
    """``MCPServer.from_openapi``: a server named for the spec's ``info.title`` unless ``name``
    says otherwise, its tools the admitted operations; other keywords configure the server."""
    session = session or requests.Session()
    document, source = load_spec(spec, session, timeout)
    mcp = cls(name or str((document.get("info") or {}).get("title") or "openapi"), **options)
    add_openapi_tools(mcp, document, base_url=base_url or _base_url(document, None, source, optional=True),
                      session=session, auth=auth, timeout=timeout, excerpt=excerpt,
                      select=OperationFilter(tags, operation_ids, methods, exclude_tags, exclude_operation_ids))
    return mcp


def add_openapi_tools(mcp: MCPServer[Any], spec: Mapping[str, Any] | str | Path, *, base_url: str | None = None,
                      session: requests.Session | None = None, auth: requests.auth.AuthBase | None = None,
                      timeout: float = 30.0, excerpt: int = 2000, select: OperationFilter = OperationFilter(),
                      allowed: Callable[[Any], bool] | None = None, requirement: str | None = None) -> list[str]:
    """Register one tool on ``mcp`` per operation of ``spec`` that ``select`` admits; their names.
    On a server inside a web application (``minimcp.flask.MCP``, ``minimcp.django.MCP``)
    ``allowed`` limits who sees and calls them, as ``@mcp.tool(allowed=...)`` does."""
    access: dict[str, Any] = {}
    if allowed is not None:
        from minimcp.hosts.hosted import HostedServer

        if not isinstance(mcp, HostedServer):
            raise TypeError("allowed= needs a server that knows its users (minimcp.flask.MCP, minimcp.django.MCP)")
        access = {"allowed": allowed, "requirement": requirement}
    session = session or requests.Session()
    document, source = load_spec(spec, session, timeout)
    if not str(document.get("openapi", "")).startswith("3"):
        raise ValueError("from_openapi reads OpenAPI 3 documents (an 'openapi: 3.x' field); "
                         f"this one says {document.get('openapi') or document.get('swagger')!r}")
    root = str(_base_url(document, base_url, source))
    resolver = _Refs(document)
    names = []
    for path, item in (document.get("paths") or {}).items():
        shared = item.get("parameters") or []
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            operation_id = operation.get("operationId") or f"{method}_{path}"
            if not select.admits(method, operation, operation_id):
                continue
            call = _Operation(root, path, method, operation, shared, resolver, session, auth, timeout, excerpt)
            mcp.add_tool(call.function(_tool_name(operation_id)), annotations=call.hints(), **access)
            names.append(_tool_name(operation_id))
    return names


class _Operation:
    """One operation: its arguments, and the request a call makes."""

    def __init__(self, root: str, path: str, method: str, operation: Mapping[str, Any], shared: list[Any],
                 refs: _Refs, session: requests.Session, auth: Any, timeout: float, excerpt: int) -> None:
        self.url = root.rstrip("/") + path
        self.path, self.method, self.operation = path, method, operation
        self.session, self.auth, self.timeout, self.excerpt = session, auth, timeout, excerpt
        own = [refs.resolve(p) for p in operation.get("parameters") or []]
        keys = {(p.get("name"), p.get("in")) for p in own}
        self.parameters = [p for p in (refs.resolve(p) for p in shared) if (p.get("name"), p.get("in")) not in keys] + own
        self.body_schema = self._body(refs)

    def _body(self, refs: _Refs) -> dict[str, Any] | None:
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
        arguments = [self._parameter(p) for p in self.parameters if p.get("in") in _LOCATIONS]
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
        locations = {p["name"]: p["in"] for p in self.parameters if p.get("in") in _LOCATIONS}

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
        url = self.url
        for key, value in parts["path"].items():
            url = url.replace("{" + key + "}", quote(str(value), safe=""))
        shown = f"{self.method.upper()} {url}"
        try:
            answer = self.session.request(self.method, url, params=parts["query"] or None,
                                          headers={k: str(v) for k, v in parts["header"].items()} or None,
                                          cookies={k: str(v) for k, v in parts["cookie"].items()} or None,
                                          json=payload, auth=self.auth, timeout=self.timeout)
        except requests.RequestException as failed:
            raise ToolError(f"{shown} failed: {failed}") from None
        return http_answer(shown, answer.status_code, answer.reason, answer.text, self.excerpt)

    def hints(self) -> ToolAnnotations:
        return ToolAnnotations(title=self.operation.get("summary"), read_only_hint=self.method in ("get", "head"),
                               destructive_hint=self.method in ("put", "patch", "delete"),
                               idempotent_hint=self.method in ("get", "head", "put", "delete"), open_world_hint=True)

    def _parameter(self, parameter: Mapping[str, Any]) -> Argument:
        required = bool(parameter.get("required")) or parameter.get("in") == "path"
        return _argument(parameter["name"], parameter.get("schema") or {}, required, parameter.get("description"))


class _Refs:
    """``$ref`` within the document, inlined (a reference back into itself becomes ``{}``: any value)."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def resolve(self, node: Any) -> Any:
        while isinstance(node, Mapping) and "$ref" in node:
            node = self._target(node["$ref"])
        return node

    def inline(self, node: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, Mapping):
            if "$ref" in node:
                ref = node["$ref"]
                return {} if ref in seen else self.inline(self._target(ref), (*seen, ref))
            return {key: self.inline(value, seen) for key, value in node.items()}
        if isinstance(node, list):
            return [self.inline(value, seen) for value in node]
        return node

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"from_openapi resolves references within the document only, not {ref!r}")
        node: Any = self.document
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise ValueError(f"The OpenAPI spec refers to {ref!r}, which it does not contain")
            node = node[part]
        return copy.deepcopy(node)


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


def _base_url(document: Mapping[str, Any], base_url: str | None, source: str | None,
              optional: bool = False) -> str | None:
    """Where the operations live: ``base_url``, else the spec's first server (relative to where
    the spec was read)."""
    if base_url:
        return base_url
    servers = document.get("servers") or []
    url = servers[0].get("url") if servers else None
    if url and source:
        return urljoin(source, url)
    if url and re.match(r"https?://", url):
        return url
    if optional:
        return None
    raise ValueError("The spec names no absolute server URL: give from_openapi(..., base_url='https://api.example.com')")


def _tool_name(operation_id: str) -> str:
    """A tool name from an operation id (letters, digits, ``_``, ``-`` and ``.``, at most 128)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", operation_id).strip("_")[:128] or "operation"
