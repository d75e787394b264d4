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
import json
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pydantic_core

from minimcp.server.app.signature import argument_values, arguments_model, model_stem, read_signature
from minimcp.server.app.visibility import as_tags
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
        return [BlobResourceContents(uri=uri, mime_type=mime, _meta=meta, blob=base64.b64encode(value).decode())]
    if isinstance(value, str):
        return [TextResourceContents(uri=uri, mime_type=mime, _meta=meta, text=value)]
    return [TextResourceContents(uri=uri, mime_type=mime, _meta=meta,
                                 text=pydantic_core.to_json(value, fallback=str, indent=2).decode())]


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


class BinaryResource(Resource):
    """Fixed bytes, served as a base64 blob."""

    def __init__(self, uri: str, data: bytes, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self.data = bytes(data)

    def read(self) -> Any:
        return self.data


class FunctionResource(Resource):
    """A static resource whose function runs on every read."""

    def __init__(self, uri: str, fn: Callable[[], Any], **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self.fn = fn

    def read(self) -> Any:
        return self.fn()

    @classmethod
    def from_function(cls, fn: Callable[[], Any], uri: str, name: str | None = None, title: str | None = None,
                      description: str | None = None, mime_type: str | None = None, icons: list[Any] | None = None,
                      annotations: Any = None, meta: dict[str, Any] | None = None) -> FunctionResource:
        """The official constructor's spelling: the name defaults to the function's, the description
        to its docstring."""
        fn_name = name or fn.__name__
        if fn_name == "<lambda>":
            raise ValueError("You must provide a name for lambda functions")
        return cls(uri, fn, name=fn_name, title=title, description=description or fn.__doc__ or "",
                   mime_type=mime_type, icons=icons, annotations=annotations, meta=meta)


# `application/*` types that are text though they have no +json/+xml suffix.
_TEXTUAL_APPLICATION_TYPES = frozenset({"application/json", "application/xml"})


def default_file_encoding(mime_type: str) -> str | None:
    """How a file of ``mime_type`` is decoded unless told: the ``charset=`` it declares, else
    ``utf-8-sig`` for text (``text/*``, JSON, XML) and ``None`` (bytes, a blob) for the rest, as
    the official ``FileResource`` decides."""
    essence, *params = (part.strip() for part in mime_type.split(";"))
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value:
            return value.strip().strip('"')
    essence = essence.lower()
    if essence.startswith("text/") or essence.endswith(("+json", "+xml")) or essence in _TEXTUAL_APPLICATION_TYPES:
        return "utf-8-sig"
    return None


def _absolute(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_absolute():
        raise ValueError(f"Path must be absolute, got {str(path)!r}")
    return path


_DEFAULT = object()


class FileResource(Resource):
    """A file, read on every read (on the worker, as a resource function would): text decoded with
    ``encoding``, or bytes served as a blob when ``encoding`` is ``None``; by default the encoding
    follows ``mime_type`` (:func:`default_file_encoding`). A file that cannot be read answers
    ``-32603 Error reading resource <uri>``."""

    def __init__(self, uri: str, path: str | Path, encoding: Any = _DEFAULT, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self.path = _absolute(path)
        self.encoding: str | None = default_file_encoding(self.mime_type) if encoding is _DEFAULT else encoding
        if self.encoding is not None:
            try:  # a mistaken codec fails now, not at the first read
                b"x".decode(self.encoding)
            except LookupError as unknown:
                raise ValueError(str(unknown)) from unknown
            except UnicodeError:
                pass  # a text codec that cannot decode the probe byte

    def read(self) -> Any:
        if self.encoding is None:
            return self.path.read_bytes()
        return self.path.read_text(encoding=self.encoding)


class HttpResource(Resource):
    """The body of a URL, fetched on every read with ``requests`` (bounded by ``timeout`` seconds)."""

    def __init__(self, uri: str, url: str, *, timeout: float = 30.0, **kwargs: Any) -> None:
        kwargs.setdefault("mime_type", "application/json")
        super().__init__(uri, **kwargs)
        self.url = url
        self.timeout = timeout

    def read(self) -> Any:
        import requests

        response = requests.get(self.url, timeout=self.timeout)
        response.raise_for_status()
        return response.text


class DirectoryResource(Resource):
    """The files under a directory, as JSON ``{"files": [...]}`` (paths relative to it), optionally
    recursive and filtered by a glob ``pattern``."""

    def __init__(self, uri: str, path: str | Path, *, recursive: bool = False, pattern: str | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("mime_type", "application/json")
        super().__init__(uri, **kwargs)
        self.path = _absolute(path)
        self.recursive = recursive
        self.pattern = pattern

    def list_files(self) -> list[Path]:
        if not self.path.exists():
            raise FileNotFoundError(f"Directory not found: {self.path}")
        if not self.path.is_dir():
            raise NotADirectoryError(f"Not a directory: {self.path}")
        glob = self.path.rglob if self.recursive else self.path.glob
        return list(glob(self.pattern or "*"))

    def read(self) -> Any:
        files = [str(found.relative_to(self.path)) for found in self.list_files() if found.is_file()]
        return json.dumps({"files": files}, indent=2)


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
        self._arguments = arguments_model(f"{model_stem(fn, name)}Arguments", params.arguments)

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
