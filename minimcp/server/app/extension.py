"""Extensions (SEP-2133): an opt-in bundle of behaviour under one reverse-DNS identifier.

An ``Extension`` declares what it adds and ``MCPServer(extensions=[...])`` consumes it; the server
is never handed to the extension. What it may add is a closed list: tools, resources, request
methods of its own, and one layer around ``tools/call``. Its ``settings()`` are advertised under
``capabilities.extensions[identifier]`` (on ``server/discover``: the legacy ``initialize`` result
has no such member). Every hook has a default, so an extension overrides only what it contributes:

    class Catalog(Extension):
        identifier = "com.example/catalog"

        def methods(self):
            return [MethodBinding("com.example/search", SearchParams, search)]

Nothing here imports ``MCPServer``, so an extension can be written and imported without the
tier that consumes it (its public path is ``minimcp.server.extension``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from minimcp.jsonrpc import MCPError
from minimcp.server.core.context import CallNext, HandlerResult, ServerRequestContext
from minimcp.shared.extension import validate_extension_identifier
from minimcp.types import METHOD_NOT_FOUND, CallToolRequestParams
from minimcp.types.methods import SPEC_CLIENT_METHODS

if TYPE_CHECKING:
    from minimcp.server.app.resources import Resource

__all__ = [
    "Extension",
    "MethodBinding",
    "RequestHandler",
    "ResourceBinding",
    "ToolBinding",
    "compose_tool_call_handler",
    "validate_extension_identifier",
]

#: A request handler as the low-level ``Server`` runs it: ``handler(ctx, params) -> result``.
RequestHandler = Callable[[ServerRequestContext[Any, Any], Any], HandlerResult]


@dataclass(frozen=True)
class ToolBinding:
    """A tool an extension adds: ``fn`` as ``add_tool`` takes it, ``meta`` stamped on its ``_meta``,
    ``kwargs`` the rest of ``add_tool``'s options (``name``, ``title``, ``description``, ...)."""

    fn: Callable[..., Any]
    meta: dict[str, Any] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceBinding:
    """A resource an extension adds, already built (``TextResource``, ``FunctionResource``, ...)."""

    resource: Resource


@dataclass(frozen=True)
class MethodBinding:
    """A request method an extension serves, such as ``com.example/search``.

    ``params_type`` validates the params before ``handler(ctx, params)`` runs (subclass
    ``RequestParams`` so ``_meta`` parses as everywhere else). ``protocol_versions`` limits the
    method to those versions: asked at any other it is an unknown method (-32601), as the official
    SDK answers; ``None`` serves it at every version.

    An extension adds methods and never replaces the protocol's own: to wrap ``tools/call`` override
    ``Extension.intercept_tool_call``; to serve a removed spec method again, register it on the
    low-level ``Server`` with ``add_request_handler``.
    """

    method: str
    params_type: type[BaseModel]
    handler: RequestHandler
    protocol_versions: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.method in SPEC_CLIENT_METHODS:
            raise ValueError(f"MethodBinding cannot bind spec method {self.method!r}; extension methods are additive: "
                             "wrap tools/call with Extension.intercept_tool_call, or register a spec method on the "
                             "low-level Server with add_request_handler")
        if self.protocol_versions is not None and not self.protocol_versions:
            raise ValueError(f"MethodBinding for {self.method!r} has an empty protocol_versions set, so it could "
                             "never be served; use None to serve it at every version")

    def served_handler(self) -> RequestHandler:
        """The handler to register: ``handler`` itself, or behind its version gate."""
        if self.protocol_versions is None:
            return self.handler
        return functools.partial(_version_gated, self)


def _version_gated(binding: MethodBinding, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
    if ctx.protocol_version not in (binding.protocol_versions or ()):
        raise MCPError(METHOD_NOT_FOUND, "Method not found", binding.method)
    return binding.handler(ctx, params)


class Extension:
    """Base class of an opt-in extension: set ``identifier``, override the hooks you contribute."""

    #: The reverse-DNS identifier (``vendor-prefix/name``), the key under ``capabilities.extensions``.
    identifier: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A class-level identifier is checked here, at definition; one assigned in __init__ (an
        # identifier per instance) is checked when a server consumes the extension.
        identifier = cls.__dict__.get("identifier")
        if identifier is not None:
            validate_extension_identifier(identifier, owner=cls.__name__)

    def settings(self) -> dict[str, Any]:
        """What is advertised at ``capabilities.extensions[identifier]``; ``{}`` advertises bare support."""
        return {}

    def tools(self) -> Sequence[ToolBinding]:
        """Tools this extension adds."""
        return ()

    def resources(self) -> Sequence[ResourceBinding]:
        """Resources this extension adds."""
        return ()

    def methods(self) -> Sequence[MethodBinding]:
        """Request methods this extension serves."""
        return ()

    def intercept_tool_call(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any],
                            call_next: CallNext) -> HandlerResult:
        """A layer around ``tools/call``; by default it passes the call on.

        Return a result without calling ``call_next(ctx)`` to answer in the tool's place, or call
        it and look at (or change) what comes back. What this returns is sent as the tool's own
        result would be, in either era. ``params`` is what the tool is called with: a context
        passed on changed alters what the tool sees on ``ctx``, never its arguments.
        """
        return call_next(ctx)


def intercepts_tool_calls(extension: Extension) -> bool:
    """Whether ``extension`` overrides ``intercept_tool_call``: a server of purely additive
    extensions keeps its ``tools/call`` handler bare."""
    return type(extension).intercept_tool_call is not Extension.intercept_tool_call


def compose_tool_call_handler(extensions: Sequence[Extension], handler: RequestHandler) -> RequestHandler:
    """``handler`` (the ``tools/call`` handler) inside every extension's ``intercept_tool_call``,
    the first extension outermost."""

    def intercepted(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> HandlerResult:
        call: CallNext = functools.partial(_innermost, handler, params)
        for extension in reversed(extensions):
            call = functools.partial(_layer, extension, params, call)
        return call(ctx)

    return intercepted


def _innermost(handler: RequestHandler, params: CallToolRequestParams,
               ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
    return handler(ctx, params)


def _layer(extension: Extension, params: CallToolRequestParams, call_next: CallNext,
           ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
    return extension.intercept_tool_call(params, ctx, call_next)

