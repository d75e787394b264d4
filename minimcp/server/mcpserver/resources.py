"""Resources: static ones read by URI, and templates whose ``{placeholders}`` become arguments.

Templates are RFC 6570 as the official SDK matches them (:mod:`minimcp.shared.uri_template`):
``{var}`` (one path segment), ``{+var}`` (may span ``/``), ``{/path*}`` (a list), ``{?q,lang}``
(optional query parameters) and the other level 3 forms. Before a template's function sees its
arguments, ``ResourceSecurity`` refuses path traversal, absolute paths and NUL bytes in them (the
URI then reads as unknown). A function runs only when its resource is read; what it returns
becomes the contents (``str`` as text, ``bytes`` as a base64 blob, anything else as JSON text).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Callable

import pydantic_core

from minimcp.server.mcpserver.signature import argument_values, arguments_model, read_signature
from minimcp.server.mcpserver.visibility import as_tags
from minimcp.shared.path_security import contains_path_traversal, is_absolute_path
from minimcp.shared.uri_template import UriTemplate
from minimcp.types import BlobResourceContents, TextResourceContents
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition



@dataclass(frozen=True)
class ResourceSecurity:
    """What a template argument may not hold; ``exempt_params`` names arguments that are not paths
    (a git range ``a..b``, say). List arguments (``{/path*}``) are checked item by item."""

    reject_path_traversal: bool = True
    reject_absolute_paths: bool = True
    reject_null_bytes: bool = True
    exempt_params: AbstractSet[str] = field(default_factory=frozenset)

    def validate(self, params: Mapping[str, str | list[str]]) -> str | None:
        """The name of the first argument that breaks the policy, or ``None``."""
        for name, value in params.items():
            if name in self.exempt_params:
                continue
            for item in value if isinstance(value, list) else [value]:
                if ((self.reject_null_bytes and "\0" in item)
                        or (self.reject_path_traversal and contains_path_traversal(item))
                        or (self.reject_absolute_paths and is_absolute_path(item))):
                    return name
        return None


#: The default policy: traversal, absolute paths and NUL bytes refused in every argument.
DEFAULT_RESOURCE_SECURITY = ResourceSecurity()


class ResourceSecurityError(ValueError):
    """A template argument failed its ``ResourceSecurity``: reading stops here instead of trying a
    later, perhaps laxer, template, and the URI reads as unknown."""

    def __init__(self, template: str, param: str) -> None:
        super().__init__(f"Parameter {param!r} of template {template!r} failed security validation")
        self.template = template
        self.param = param


class ReadResourceContents:
    """One piece of a resource as ``ctx.read_resource`` hands it back."""

    def __init__(self, content: str | bytes, mime_type: str | None) -> None:
        self.content = content
        self.mime_type = mime_type


def to_contents(uri: str, value: Any, mime_type: str | None,
                meta: dict[str, Any] | None = None) -> list[TextResourceContents | BlobResourceContents]:
    """What a read returns, as contents; the resource's ``meta`` rides on them (an Apps host reads
    a ``ui://`` resource's CSP and permissions there)."""
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value):
        return value
    mime = mime_type or "text/plain"
    if isinstance(value, bytes):
        return [BlobResourceContents(uri=uri, mime_type=mime, meta=meta, blob=base64.b64encode(value).decode())]
    if isinstance(value, str):
        return [TextResourceContents(uri=uri, mime_type=mime, meta=meta, text=value)]
    return [TextResourceContents(uri=uri, mime_type=mime, meta=meta,
                                 text=pydantic_core.to_json(value, fallback=str).decode())]


class _Listed:
    """What a resource or template shows in a list: its name and the metadata around it."""

    def __init__(self, name: str, *, title: str | None = None, description: str | None = None,
                 mime_type: str | None = None, icons: list[Any] | None = None, annotations: Any = None,
                 meta: dict[str, Any] | None = None, tags: Iterable[str] | None = None) -> None:
        self.name = name
        self.tags = as_tags(tags)
        self.title = title
        self.description = description
        self.mime_type = mime_type or "text/plain"
        #: Whether ``mime_type`` was given rather than defaulted (an Apps resource defaults to its own).
        self.mime_type_given = mime_type is not None
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

    def __init__(self, uri_template: str, fn: Callable[..., Any], *, name: str,
                 security: ResourceSecurity = DEFAULT_RESOURCE_SECURITY, **details: Any) -> None:
        super().__init__(name, **details)
        self.uri_template = uri_template
        self.fn = fn
        self.security = security
        params = read_signature(fn, name)
        self.context_params = params.context
        self._template = UriTemplate.parse(uri_template)
        uri_params = set(self._template.variable_names)
        function_params = set(params.arguments)
        if uri_params != function_params:
            raise ValueError(f"Mismatch between URI parameters {uri_params} and function parameters {function_params}")
        for var in sorted(self._template.query_variable_names):
            if params.arguments[var][1] is ...:
                raise ValueError(f"Query parameter {var!r} of {uri_template} needs a default in the function")
        self._arguments = arguments_model(f"{name}Arguments", params.arguments)

    def definition(self) -> TemplateDefinition:
        return TemplateDefinition(uri_template=self.uri_template, **self._listing())

    def match(self, uri: str) -> dict[str, Any] | None:
        """The arguments ``uri`` carries, ``None`` when it is not this template's; raises
        ``ResourceSecurityError`` when it is, but an argument fails ``security``."""
        values = self._template.match(uri)
        if values is not None:
            refused = self.security.validate(values)
            if refused is not None:
                raise ResourceSecurityError(self.uri_template, refused)
        return values

    def read(self, values: dict[str, Any], ctx: Any) -> Any:
        arguments = argument_values(self._arguments.model_validate(values))
        for param in self.context_params:
            arguments[param] = ctx
        return self.fn(**arguments)


def is_template(uri: str) -> bool:
    return UriTemplate.is_template(uri)
