"""MCP Apps (``io.modelcontextprotocol/ui``): a tool that carries an interactive UI.

The tool's ``_meta.ui.resourceUri`` names a ``ui://`` resource, an HTML document served as
``text/html;profile=mcp-app``, which the host renders in a sandboxed frame. ``Apps`` is an additive
``Extension``: it adds the tools and their resources and advertises itself, nothing more::

    apps = Apps()

    @apps.tool(resource_uri="ui://clock/app.html", description="Current time")
    def get_time(ctx: Context) -> str:
        now = datetime.now(timezone.utc).isoformat()
        return now if client_supports_apps(ctx) else f"The time is {now}."

    apps.add_html_resource("ui://clock/app.html", CLOCK_HTML)
    mcp = MCPServer("clock", extensions=[apps])

A client that did not negotiate Apps still calls the tool, so the tool should answer in text too:
``client_supports_apps(ctx)`` says which kind of client is asking.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from minimcp.server.core.context import ServerRequestContext
from minimcp.server.app.extension import Extension, ResourceBinding, ToolBinding
from minimcp.server.app.context import Context
from minimcp.server.app.resources import Resource, TextResource

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "Apps",
    "ResourceCsp",
    "ResourcePermissions",
    "Visibility",
    "client_supports_apps",
]

#: The MCP Apps extension identifier.
EXTENSION_ID = "io.modelcontextprotocol/ui"

#: The MIME type of a ``ui://`` app resource; a host renders no other.
APP_MIME_TYPE = "text/html;profile=mcp-app"

#: Where a UI-bound tool is offered (``_meta.ui.visibility``): to the model, to the app, or both.
Visibility = Literal["model", "app"]

_CallableT = TypeVar("_CallableT", bound=Callable[..., Any])


class ResourcePermissions(BaseModel):
    """The frame permissions a ``ui://`` resource asks for (``_meta.ui.permissions``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    camera: dict[str, Any] | None = None
    microphone: dict[str, Any] | None = None
    geolocation: dict[str, Any] | None = None
    clipboard_write: dict[str, Any] | None = None


class ResourceCsp(BaseModel):
    """The Content-Security-Policy domains of a ``ui://`` resource (``_meta.ui.csp``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    connect_domains: list[str] | None = None
    resource_domains: list[str] | None = None
    frame_domains: list[str] | None = None
    base_uri_domains: list[str] | None = None


class Apps(Extension):
    """Tools bound to ``ui://`` resources: ``@apps.tool(resource_uri=...)`` and
    ``apps.add_html_resource(...)``, then ``MCPServer(extensions=[apps])``."""

    identifier = EXTENSION_ID

    def __init__(self) -> None:
        self._tools: list[tuple[ToolBinding, str]] = []  # each tool with the ui:// URI it renders
        self._resources: list[ResourceBinding] = []

    def tool(self, *, resource_uri: str, visibility: Sequence[Visibility] | None = None,
             meta: dict[str, Any] | None = None, **tool_kwargs: Any) -> Callable[[_CallableT], _CallableT]:
        """Register a tool that renders the ``ui://`` resource ``resource_uri``.

        ``visibility`` goes to ``_meta.ui.visibility``; ``meta`` holds further ``_meta`` keys (the
        ``ui`` key is this decorator's); ``tool_kwargs`` are ``add_tool``'s (``name``, ``title``,
        ``description``, ``annotations``, ...).
        """
        _require_ui_scheme(resource_uri)
        if meta and "ui" in meta:
            raise ValueError("Apps.tool() writes _meta['ui'] itself; pass resource_uri= and visibility= "
                             "instead of a 'ui' meta key")
        ui: dict[str, Any] = {"resourceUri": resource_uri}
        if visibility is not None:
            ui["visibility"] = list(visibility)

        def decorator(fn: _CallableT) -> _CallableT:
            self._tools.append((ToolBinding(fn=fn, meta={**(meta or {}), "ui": ui}, kwargs=tool_kwargs), resource_uri))
            return fn

        return decorator

    def add_html_resource(self, uri: str, html: str, *, name: str | None = None, title: str | None = None,
                          description: str | None = None, csp: ResourceCsp | None = None,
                          permissions: ResourcePermissions | None = None, domain: str | None = None,
                          prefers_border: bool | None = None, tags: Iterable[str] | None = None) -> None:
        """Serve ``html`` at the ``ui://`` URI ``uri`` as an app; ``csp``, ``permissions``, ``domain``
        and ``prefers_border`` become its ``_meta.ui``. It is listed and read only while a tool that
        renders it is (a tool hidden by its tags, ``disable`` or a ``component_filter`` hides its
        app); ``tags`` select it as they select any resource."""
        ui: dict[str, Any] = {}
        if csp is not None:
            ui["csp"] = csp.model_dump(by_alias=True, exclude_none=True)
        if permissions is not None:
            ui["permissions"] = permissions.model_dump(by_alias=True, exclude_none=True)
        if domain is not None:
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border
        self.add_resource(TextResource(uri, html, name=name or uri, title=title, description=description,
                                       mime_type=APP_MIME_TYPE, meta={"ui": ui} if ui else None, tags=tags))

    def add_resource(self, resource: Resource) -> None:
        """Serve a resource built some other way (a ``FunctionResource`` reading HTML from disk, ...).

        Without a MIME type of its own it is served as ``text/html;profile=mcp-app``; any other
        explicit type is refused, since a host renders a ``ui://`` resource under that one only.
        """
        _require_ui_scheme(resource.uri)
        if not resource.mime_type_given:
            resource = copy.copy(resource)
            resource.mime_type = APP_MIME_TYPE
            resource.mime_type_given = True
        elif resource.mime_type != APP_MIME_TYPE:
            raise ValueError(f"MCP Apps resources are served as {APP_MIME_TYPE!r}, got {resource.mime_type!r}")
        self._resources.append(ResourceBinding(resource=resource))

    def tools(self) -> Sequence[ToolBinding]:
        """The bound tools; a tool whose ``ui://`` resource was never added is refused here, when the
        server takes the extension, rather than found later as a read that fails."""
        registered = {binding.resource.uri for binding in self._resources}
        for tool, uri in self._tools:
            if uri not in registered:
                raise ValueError(f"Apps tool {tool.fn.__name__!r} binds resource_uri {uri!r}, but no such resource is "
                                 "registered; add it with add_html_resource() or add_resource()")
        return [tool for tool, _ in self._tools]

    def resources(self) -> Sequence[ResourceBinding]:
        return self._resources


def client_supports_apps(ctx: Context[Any, Any] | ServerRequestContext[Any, Any]) -> bool:
    """Whether the client negotiated MCP Apps: it declared the extension and listed
    ``text/html;profile=mcp-app`` among its ``mimeTypes``. Otherwise answer in text only."""
    extensions = ctx.session.client_capabilities.extensions
    settings = extensions.get(EXTENSION_ID) if extensions else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, (list, tuple)) and APP_MIME_TYPE in mime_types


def _require_ui_scheme(uri: str) -> None:
    if not uri.startswith("ui://"):
        raise ValueError(f"MCP Apps URIs must use the ui:// scheme, got {uri!r}")

