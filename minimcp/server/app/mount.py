"""Composition: one ``MCPServer`` serving another's components, live (``parent.mount(child, namespace=...)``).

**The rule of names.** With ``namespace="billing"``:

- a tool or a prompt ``create_invoice`` is ``billing_create_invoice`` (the namespace, ``_``, the name);
- a resource ``invoice://2024/7`` is ``invoice://billing/2024/7`` and a template
  ``invoice://{year}/{n}`` is ``invoice://billing/{year}/{n}``: the namespace becomes the first
  path segment after ``scheme://`` (after ``scheme:`` where the URI has no ``//``: ``urn:billing/x``);
  a resource's or template's own ``name`` gains the prefix as a tool's does, and so does the
  ``ui://`` resource a tool's ``_meta`` names (MCP Apps);
- ``namespace=None`` serves the child's components under their own names.

A namespace is letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, at most 64
characters, so that a prefixed tool name stays a valid one (``[A-Za-z0-9._-]{1,128}``, as long as
the child's own names leave room) and the namespace a valid URI path segment. The parent's own
components come first, then the mounts in the order they were made: the first to claim a name
or URI serves it, and a listing shows only that one.

**Live.** Nothing is copied: every listing asks the child (``list_tools``, ``list_resources``, ...),
every request finds its component in the child (``get_tool``, ``component``) and runs it there
with a ``Context`` of the child (the tool the parent's plan found, through the child's own rules,
or a subclass's ``call_tool``; ``read_resource_result``, ``get_prompt``, ``complete``), so what is added to, removed from, enabled or disabled on the child shows at once. The
parent's ``enable``/``disable`` rules, tags and ``component_filter`` apply on top, to the
prefixed component (``MountedTool``, ``MountedComponent``), as do a mounted tool's
``required_scopes``, timeout and ``Mcp-Param-*`` schema, which the parent's plan carries.

**What the child brings along.** Its middleware (``MCPServer(middleware=...)``, except the
OpenTelemetry layer: the parent's span covers the call) wraps its own components' requests, with
the child's names and URIs in ``ctx.params``, and only those; its lifespan runs inside each of
the parent's (``MountLifespan``) and its value is the ``lifespan_context`` its components see;
its change announcements reach the parent's clients (``follow``, ``MCPServer.notify_list_changed``);
its completion handler answers for its prompts and templates (``Mount.completion_ref``).

A mounted task tool runs as a plain call: tasks live in the store of the server that serves the
``tasks/*`` requests, the parent's, which holds no record of the child's. A child that passes on
tasks it does not keep (``relays_tasks``: a proxy, whose tasks are its upstream's) answers the
``tasks/*`` of those itself; the parent asks it first (``MCPServer._routed_task``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import ToolError
from minimcp.server.app.namespace import check_namespace
from minimcp.server.app.tools import Tool, failure_result
from minimcp.server.core.context import ServerRequestContext
from minimcp.server.core.otel import OpenTelemetryMiddleware
from minimcp.server.core.rounds import InputRequired
from minimcp.shared.subscriptions import ResourceUpdated, ServerEvent
from minimcp.types import CallToolResult, CompleteResult, GetPromptResult, InputRequiredResult, ReadResourceResult, dump

if TYPE_CHECKING:
    from minimcp.server.app.server import MCPServer

__all__ = ["Mount", "MountLifespan", "MountedComponent", "MountedTool", "Names", "check_namespace"]

logger = logging.getLogger("minimcp.server")


#: The kinds of component a server can be asked for by key (``MCPServer.component``).
ComponentKind = Literal["tool", "resource", "template", "prompt"]


@dataclasses.dataclass(frozen=True)
class Names:
    """The rule of names of one mount, both ways: ``outer_*`` is what the parent's clients see,
    ``inner_*`` what the child knows (``None``: not one of this mount's)."""

    namespace: str | None

    def outer_name(self, name: str) -> str:
        return name if self.namespace is None else f"{self.namespace}_{name}"

    def inner_name(self, name: str) -> str | None:
        if self.namespace is None:
            return name
        prefix = f"{self.namespace}_"
        return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else None

    def outer_uri(self, uri: str) -> str:
        namespace = self.namespace
        if namespace is None:
            return uri
        scheme, colon, rest = uri.partition(":")
        if not colon:
            return f"{namespace}/{uri}"
        if rest.startswith("//"):
            return f"{scheme}://{namespace}/{rest[2:]}"
        return f"{scheme}:{namespace}/{rest}"

    def inner_uri(self, uri: str) -> str | None:
        namespace = self.namespace
        if namespace is None:
            return uri
        scheme, colon, rest = uri.partition(":")
        if colon and rest.startswith(f"//{namespace}/"):
            return f"{scheme}://{rest[len(namespace) + 3:]}"
        if colon and rest.startswith(f"{namespace}/"):
            return f"{scheme}:{rest[len(namespace) + 1:]}"
        if uri.startswith(f"{namespace}/"):
            return uri[len(namespace) + 1:]
        return None

    def outer_meta(self, meta: dict[str, Any] | None) -> dict[str, Any] | None:
        """A tool's ``_meta`` with the ``ui://`` resource it names (MCP Apps) as the parent serves it."""
        ui = meta.get("ui") if meta and self.namespace is not None else None
        if not (isinstance(ui, dict) and isinstance(ui.get("resourceUri"), str)):
            return meta
        assert meta is not None
        return {**meta, "ui": {**ui, "resourceUri": self.outer_uri(ui["resourceUri"])}}


class MountedTool(Tool):
    """A child's tool as its parent serves it: the prefixed name, the child's tool for everything
    else. What the parent's plan carries (found once per request); ``run`` runs it in the child.

    It does not build a ``Tool`` of its own (no schema is made again): only what the parent reads
    of a tool (its listing, scopes, timeout, input schema, whether it can send) is set here."""

    def __init__(self, mount: Mount, inner: Tool, name: str) -> None:
        self.mount = mount
        self.inner = inner
        self.name = name
        self.title = inner.title
        self.description = inner.description
        self.annotations = inner.annotations
        self.icons = inner.icons
        self.meta = mount.names.outer_meta(inner.meta)
        self.required_scopes = list(inner.required_scopes)
        self.tags = inner.tags
        self.timeout = inner.timeout
        self.parameters = inner.parameters
        self.header_routed = inner.header_routed
        self.output = inner.output
        self.task = None  # see the module docstring: the parent runs no task of the child's
        layered = mount.layered()
        #: The child's middleware and component filter take the request's context, so a call with
        #: either can send (``Plan.silent`` is false) and needs its ``Context``.
        self.can_send = inner.can_send or layered
        self.needs_context = inner.needs_context or layered

    def definition(self) -> Any:
        return self.inner.definition().model_copy(update={"name": self.name, "meta": self.meta})

    def run(self, arguments: dict[str, Any] | None, ctx: Context | None, wire: bool = False) -> Any:
        return self.mount.call_tool(self, arguments, ctx, wire)


class MountedComponent:
    """A child's resource, template or prompt as its parent serves it: the prefixed name and URI
    that the parent's ``enable``/``disable`` rules and ``component_filter`` see, the child's tags."""

    def __init__(self, mount: Mount, kind: ComponentKind, inner: Any, definition: Any) -> None:
        names = mount.names
        self.mount = mount
        self.kind = kind
        self.inner = inner
        self.name = names.outer_name(definition.name)
        self.tags = getattr(inner, "tags", None) or frozenset()
        self.meta = getattr(definition, "meta", None)
        self.uri = names.outer_uri(definition.uri) if kind == "resource" else None
        self.uri_template = names.outer_uri(definition.uri_template) if kind == "template" else None
        update: dict[str, Any] = {"name": self.name}
        if self.uri is not None:
            update["uri"] = self.uri
        if self.uri_template is not None:
            update["uri_template"] = self.uri_template
        self._definition = definition.model_copy(update=update)

    def definition(self) -> Any:
        return self._definition


class MountLifespan:
    """A child's lifespan as its parent's lifespans hold it: entered when the first of them is
    (the process-wide one, an in-memory connection's), exited when the last one is, so it runs
    inside the parent's. ``_lock`` guards the count and the entered context manager; entering and
    exiting happen under it, so a second holder waits for the first to finish entering."""

    def __init__(self, child: MCPServer[Any]) -> None:
        self.child = child
        self._lock = threading.Lock()
        self._holders = 0
        self._late = 0
        self._cm: AbstractContextManager[Any] | None = None
        self._value: Any = None

    @contextmanager
    def held(self) -> Iterator[None]:
        self._acquire()
        try:
            yield
        finally:
            self._release()

    def value(self) -> Any:
        """What the child's lifespan yielded. A child mounted after the parent's lifespan began is
        entered here, on first use, and exited by the parent's ``close()``."""
        if self._cm is not None:
            return self._value
        with self._lock:
            late = self._cm is None
        if late:
            self._acquire()
            with self._lock:
                self._late += 1
        return self._value

    def close(self) -> None:
        """Let go of the holds ``value`` took (the parent is closing)."""
        with self._lock:
            late, self._late = self._late, 0
        for _ in range(late):
            self._release()

    def _acquire(self) -> None:
        with self._lock:
            if self._holders == 0:
                cm = self.child.new_lifespan()
                self._value = cm.__enter__()
                self._cm = cm
            self._holders += 1

    def _release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders > 0:
                return
            cm, self._cm = self._cm, None
            if cm is not None:
                cm.__exit__(None, None, None)


def _layered(layer: Callable[..., Any], call_next: Callable[..., Any], ctx: ServerRequestContext[Any, Any]) -> Any:
    return layer(ctx, call_next)


def _model(result: Any, model: type[BaseModel]) -> Any:
    """What a middleware answered (a dict, a model, ``None``) as the model the in-process API returns."""
    if isinstance(result, BaseModel):
        return result
    result = result or {}
    if result.get("resultType") == "input_required":
        return InputRequiredResult.model_validate(result)
    return model.model_validate(result)


class Mount:
    """One child in its parent, under one namespace (``MCPServer.mount``)."""

    def __init__(self, parent: MCPServer[Any], child: MCPServer[Any], namespace: str | None,
                 lifespan: MountLifespan) -> None:
        self.parent = parent
        self.child = child
        self.namespace = namespace
        self.names = Names(namespace)
        self.lifespan = lifespan

    def __repr__(self) -> str:
        return f"Mount({self.child.name!r}, namespace={self.namespace!r})"

    # --- what the child serves, as the parent shows it ---------------------------------------------
    def layers(self) -> list[Any]:
        """The child's middleware for its own components: its list as it is now, less the span layer."""
        return [layer for layer in self.child.middleware if not isinstance(layer, OpenTelemetryMiddleware)]

    def layered(self) -> bool:
        """Whether a request of the child's needs its context: middleware, or a component filter."""
        return self.child._filtered() or bool(self.layers())

    def tool(self, name: str) -> MountedTool | None:
        inner_name = self.names.inner_name(name)
        inner = self.child.get_tool(inner_name) if inner_name is not None else None
        return MountedTool(self, inner, name) if inner is not None else None

    def tools(self) -> list[MountedTool]:
        """The child's listed tools, prefixed (the child's own rules applied)."""
        found = []
        for definition in self.child.list_tools():
            inner = self.child.get_tool(definition.name)
            if inner is not None:
                found.append(MountedTool(self, inner, self.names.outer_name(definition.name)))
        return found

    def components(self, kind: Literal["resource", "template", "prompt"]) -> list[MountedComponent]:
        """The child's listed resources, templates or prompts, prefixed."""
        child = self.child
        if kind == "resource":
            return [MountedComponent(self, kind, child.component(kind, d.uri), d) for d in child.list_resources()]
        if kind == "template":
            return [MountedComponent(self, kind, child.component(kind, d.uri_template), d)
                    for d in child.list_resource_templates()]
        return [MountedComponent(self, kind, child.component(kind, d.name), d) for d in child.list_prompts()]

    def component(self, kind: ComponentKind, key: str) -> Any:
        """The child's component of ``kind`` the parent's ``key`` names, prefixed; ``None`` if none."""
        if kind == "tool":
            return self.tool(key)
        names = self.names
        inner_key = names.inner_name(key) if kind == "prompt" else names.inner_uri(key)
        if inner_key is None:
            return None
        inner = self.child.component(kind, inner_key)
        if inner is None:
            return None
        return MountedComponent(self, kind, inner, inner.definition())

    def template_for(self, inner_uri: str) -> MountedComponent | None:
        """The child's listed template that ``inner_uri`` matches, prefixed (for the parent's rules)."""
        for mounted in self.components("template"):
            match = getattr(mounted.inner, "match", None)
            try:
                if match is not None and match(inner_uri) is not None:
                    return mounted
            except ValueError:  # the child's security refused the argument: it answers that itself
                return None
        return None

    # --- running a request of the child's ------------------------------------------------------------
    def _request(self, ctx: Context, params: dict[str, Any], plan_target: Any = None) -> ServerRequestContext[Any, Any]:
        """The parent's request as the child sees it: its names, its lifespan's value."""
        rc = ctx.request_context
        plan = rc.plan
        if plan is not None:
            plan = dataclasses.replace(plan, name=params.get("name"), target=plan_target)
        return dataclasses.replace(rc, params=params, lifespan_context=self.lifespan.value(), plan=plan)

    def _serve(self, ctx: Context, params: dict[str, Any], target: Any,
               run: Callable[[ServerRequestContext[Any, Any], Context, bool], Any]) -> Any:
        """``run(request, context, layered)`` for the parent's request ``ctx``, inside the child's
        middleware, outermost first, as the child's dispatcher would run its handler: with a
        ``Context`` of the child on the parent's round, so a question reaches the parent's client
        in either era. The middleware gets what a handler answers in wire form (``layered``), and
        a 2026-07-28 question as the ``input_required`` result it ends in; the parent's round
        then answers it, with its own sealed state."""
        child = self.child
        layers = self.layers()
        request = self._request(ctx, params, target)
        if not layers:
            return run(request, ctx.serving(request, child), False)
        asked: list[InputRequired] = []

        def innermost(rc: ServerRequestContext[Any, Any]) -> Any:
            try:
                result = run(rc, ctx.serving(rc, child), True)
            except InputRequired as pending:
                asked.append(pending)
                return {"resultType": "input_required", "inputRequests": pending.requests}
            return dump(result) if isinstance(result, BaseModel) else result

        call: Callable[[ServerRequestContext[Any, Any]], Any] = innermost
        for layer in reversed(layers):
            call = functools.partial(_layered, layer, call)
        result = call(request)
        if asked:
            raise asked[0]
        return result

    def call_tool(self, tool: MountedTool, arguments: dict[str, Any] | None, ctx: Context | None, wire: bool) -> Any:
        """Run the child's tool for the parent's request (``MountedTool.run``); the child checks
        its own rules and filter. A middleware that passes another name on is obeyed."""
        child = self.child
        inner_name = tool.inner.name
        if ctx is None:  # a silent call, or an in-process one: nothing of the request to hand on
            return child._call_mounted_tool(inner_name, arguments, None, wire, tool.inner)

        def run(request: ServerRequestContext[Any, Any], context: Context, layered: bool) -> Any:
            params = request.params or {}
            name = params.get("name", inner_name)
            try:
                return child._call_mounted_tool(name, params.get("arguments", arguments), context, wire or layered,
                                                tool.inner if name == inner_name else None)
            except ToolError as failure:
                return failure_result(failure)

        params = {**(ctx.request_context.params or {}), "name": inner_name, "arguments": arguments}
        result = self._serve(ctx, params, tool.inner, run)
        return result if wire else _model(result, CallToolResult)

    def read_resource(self, inner_uri: str, ctx: Context | None) -> ReadResourceResult | InputRequiredResult:
        """Read the child's resource for the parent's request; its contents carry the parent's URIs."""
        child = self.child
        if ctx is None:
            result = child.read_resource_result(inner_uri)
        else:
            def run(request: ServerRequestContext[Any, Any], context: Context, layered: bool) -> Any:
                return child.read_resource_result(str((request.params or {}).get("uri", inner_uri)), context)

            params = {**(ctx.request_context.params or {}), "uri": inner_uri}
            result = _model(self._serve(ctx, params, None, run), ReadResourceResult)
        if not isinstance(result, ReadResourceResult):
            return result
        outer = self.names.outer_uri
        return result.model_copy(update={"contents": [
            content.model_copy(update={"uri": outer(content.uri)}) for content in result.contents]})

    def get_prompt(self, inner_name: str, arguments: dict[str, str] | None, ctx: Context | None) -> Any:
        """Render the child's prompt for the parent's request."""
        child = self.child
        if ctx is None:
            return child.get_prompt(inner_name, arguments)

        def run(request: ServerRequestContext[Any, Any], context: Context, layered: bool) -> Any:
            params = request.params or {}
            return child.get_prompt(params.get("name", inner_name), params.get("arguments", arguments), context)

        params = {**(ctx.request_context.params or {}), "name": inner_name, "arguments": arguments}
        return _model(self._serve(ctx, params, None, run), GetPromptResult)

    def completion_ref(self, ref: Any) -> Any:
        """``ref`` (a ``completion/complete`` reference) as the child knows it, if it names one of
        the child's prompts or templates; else ``None``."""
        if getattr(ref, "type", None) == "ref/prompt":
            prompt = self.component("prompt", ref.name)
            return ref.model_copy(update={"name": prompt.inner.name}) if prompt is not None else None
        uri = getattr(ref, "uri", None)
        inner_uri = self.names.inner_uri(uri) if isinstance(uri, str) else None
        if inner_uri is None or self.child.component("template", inner_uri) is None:
            return None
        return ref.model_copy(update={"uri": inner_uri})

    def complete(self, ref: Any, argument: Any, context: Any, ctx: Context | None) -> Any:
        """Complete for the parent's request with the child's handler, through its middleware."""
        child = self.child
        if ctx is None:
            return child.complete(ref, argument, context)

        def run(request: ServerRequestContext[Any, Any], served: Context, layered: bool) -> Any:
            return child.complete(ref, argument, context, served)

        params = {**(ctx.request_context.params or {}), "ref": dump(ref)}
        return _model(self._serve(ctx, params, None, run), CompleteResult)

    def usable(self, kind: Any, inner: Any, ctx: Context | None) -> str | None:
        """Why the child will not serve ``inner`` now (its ``disable``, its component filter or a
        deeper mount's for this request's caller), as the parent's ``_usable`` answers, so that
        the parent refuses it by the name it serves it under; ``None`` where it will."""
        child = self.child
        if ctx is None or not child._filtered():
            return child._usable(kind, inner, None)
        request = dataclasses.replace(ctx.request_context, lifespan_context=self.lifespan.value())
        return child._usable(kind, inner, ctx.serving(request, child))


def follow(parent: MCPServer[Any], child: MCPServer[Any]) -> None:
    """Relay what ``child`` publishes on its bus (a handler's ``ctx.notify_*``, its own
    announcements) to ``parent``'s, so the parent's listens hear it; a resource's update once
    per namespace the child is mounted under, by the URI served there. A bus the two share needs
    no relay (the parent's listens follow it already). One relay per child, however often mounted."""
    if child.subscriptions is parent.subscriptions:
        return

    def relay(event: ServerEvent) -> None:
        if isinstance(event, ResourceUpdated):
            events: list[ServerEvent] = [ResourceUpdated(uri=mount.names.outer_uri(event.uri))
                                         for mount in parent.mounts if mount.child is child]
        else:
            events = [event]
        try:
            for relayed in events:
                parent.subscriptions.publish(relayed)
        except Exception:  # a listener must not raise: the child's publisher would get the parent's fault
            logger.exception("relaying %r from mounted server %r failed", event, child.name)

    child.subscriptions.subscribe(relay)


def reaches(server: MCPServer[Any], target: MCPServer[Any]) -> bool:
    """Whether ``target`` is ``server`` or mounted in it, at any depth."""
    return server is target or any(reaches(mount.child, target) for mount in server.mounts)
