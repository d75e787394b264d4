"""Resources: static ones read by URI, and templates whose ``{placeholders}`` become arguments.

Templates follow the RFC 6570 forms servers use in practice: ``{var}`` (one path segment),
``{+var}`` (may span ``/``), and ``{?q,lang}`` (optional query parameters). A function runs only
when its resource is read; what it returns becomes the contents (``str`` as text, ``bytes`` as a
base64 blob, anything else as JSON text).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote

import pydantic_core

from minimcp.server.mcpserver.signature import argument_values, arguments_model, read_signature
from minimcp.types import BlobResourceContents, TextResourceContents
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition

_VARIABLE = re.compile(r"\{([+?]?)([^}]+)\}")


class ReadResourceContents:
    """One piece of a resource as ``ctx.read_resource`` hands it back."""

    def __init__(self, content: str | bytes, mime_type: str | None) -> None:
        self.content = content
        self.mime_type = mime_type


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[TextResourceContents | BlobResourceContents]:
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value):
        return value
    mime = mime_type or "text/plain"
    if isinstance(value, bytes):
        return [BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(value).decode())]
    if isinstance(value, str):
        return [TextResourceContents(uri=uri, mime_type=mime, text=value)]
    return [TextResourceContents(uri=uri, mime_type=mime, text=pydantic_core.to_json(value, fallback=str).decode())]


class _Listed:
    """What a resource or template shows in a list: its name and the metadata around it."""

    def __init__(self, name: str, *, title: str | None = None, description: str | None = None,
                 mime_type: str | None = None, icons: list[Any] | None = None, annotations: Any = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.name = name
        self.title = title
        self.description = description
        self.mime_type = mime_type or "text/plain"
        self.icons = icons
        self.annotations = annotations
        self.meta = meta

    def _listing(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "description": self.description, "mime_type": self.mime_type,
                "icons": self.icons, "annotations": self.annotations, "meta": self.meta}


class Resource(_Listed):
    """A static resource: ``read`` produces its contents."""

    def __init__(self, uri: str, *, name: str | None = None, **details: Any) -> None:
        super().__init__(name or uri, **details)
        self.uri = uri

    def definition(self) -> ResourceDefinition:
        return ResourceDefinition(uri=self.uri, **self._listing())

    def read(self) -> Any:
        raise TypeError(f"resource {self.uri} has nothing to read")


class TextResource(Resource):
    def __init__(self, uri: str, text: str, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self.text = text

    def read(self) -> Any:
        return self.text


class FunctionResource(Resource):
    """A static resource whose function runs on every read."""

    def __init__(self, uri: str, fn: Callable[[], Any], **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self.fn = fn

    def read(self) -> Any:
        return self.fn()


class ResourceTemplate(_Listed):
    """A parametrised resource; ``match`` recognises its URIs and extracts the arguments."""

    def __init__(self, uri_template: str, fn: Callable[..., Any], *, name: str, **details: Any) -> None:
        super().__init__(name, **details)
        self.uri_template = uri_template
        self.fn = fn
        params = read_signature(fn, name)
        self.context_params = params.context
        self._pattern, path_vars, query_vars = _compile(uri_template)
        function_params = set(params.arguments)
        if set(path_vars) | set(query_vars) != function_params:
            raise ValueError(
                f"Mismatch between URI parameters {set(path_vars) | set(query_vars)} and function parameters "
                f"{function_params}"
            )
        for var in query_vars:
            if params.arguments[var][1] is ...:
                raise ValueError(f"Query parameter {var!r} of {uri_template} needs a default in the function")
        self._query_vars = query_vars
        self._arguments = arguments_model(f"{name}Arguments", params.arguments)

    def definition(self) -> TemplateDefinition:
        return TemplateDefinition(uri_template=self.uri_template, **self._listing())

    def match(self, uri: str) -> dict[str, Any] | None:
        path, _, query = uri.partition("?")
        found = self._pattern.fullmatch(path)
        if found is None:
            return None
        values: dict[str, Any] = {k: unquote(v) for k, v in found.groupdict().items()}
        for key, value in parse_qsl(query):
            if key in self._query_vars:
                values[key] = value
        return values

    def read(self, values: dict[str, Any], ctx: Any) -> Any:
        arguments = argument_values(self._arguments.model_validate(values))
        for param in self.context_params:
            arguments[param] = ctx
        return self.fn(**arguments)


def _compile(template: str) -> tuple[re.Pattern[str], list[str], list[str]]:
    pattern, last = "", 0
    path_vars: list[str] = []
    query_vars: list[str] = []
    for found in _VARIABLE.finditer(template):
        pattern += re.escape(template[last:found.start()])
        operator, names = found.group(1), found.group(2).split(",")
        if operator == "?":
            query_vars.extend(n.strip() for n in names)
        else:
            for name in names:
                name = name.strip()
                pattern += f"(?P<{name}>.+)" if operator == "+" else f"(?P<{name}>[^/?#]+)"
                path_vars.append(name)
        last = found.end()
    pattern += re.escape(template[last:])
    return re.compile(pattern), path_vars, query_vars



def is_template(uri: str) -> bool:
    return bool(_VARIABLE.search(uri))
