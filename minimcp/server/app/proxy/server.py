"""``ProxyServer``: an ``MCPServer`` whose components are also those of its upstreams.

A proxy is a provider whose handlers are client calls to an upstream: each lookup the server
makes (a tool for ``tools/call``, a listing, a resource, a prompt, a task) falls through to the
upstreams' :class:`~minimcp.server.app.proxy.provider.Mirror` when the proxy's own registries do
not have it, so tools registered on the proxy itself are served beside the mirrored ones, and
everything else of ``MCPServer`` (both eras, HTTP and stdio, middleware, filters, auth) applies to
the proxied calls unchanged.

A gateway of several upstreams names each one's tools and prompts ``name_tool(upstream, name)``;
an upstream that fails its listing is left out of the listing (and logged, naming it) while the
others are served. A change notification from an upstream drops its cached listing and is passed
on to the proxy's own clients.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from minimcp.jsonrpc import MCPError
from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import ResourceNotFoundError
from minimcp.server.app.proxy.provider import Mirror
from minimcp.server.app.proxy.relay import forward
from minimcp.server.app.proxy.config import ProxyConfigError, UpstreamSpec
from minimcp.server.app.proxy.upstream import ConnectionFactory, Credentials, Upstream, UpstreamConnection, open_client
from minimcp.server.app.server import MCPServer
from minimcp.server.app.tools import Tool
from minimcp.server.core.context import ServerRequestContext
from minimcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
    event_method,
)
from minimcp.shared.tasks import TASKS_EXTENSION, GetTaskResult
from minimcp.shared.uri_template import InvalidUriTemplate, UriTemplate
from minimcp.types import (
    INVALID_PARAMS,
    GetPromptResult,
    InputRequiredResult,
    ReadResourceResult,
    Result,
    SubscribeRequestParams,
    dump,
)
from minimcp.types import Prompt as PromptDefinition
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition
from minimcp.types import Tool as ToolDefinition

logger = logging.getLogger("minimcp.server.proxy")

#: Upstream notification method -> (the listing it makes stale, the event the proxy's clients hear).
_CHANGES: dict[str, tuple[str, ServerEvent]] = {
    "notifications/tools/list_changed": ("tools/list", ToolsListChanged()),
    "notifications/resources/list_changed": ("resources/list", ResourcesListChanged()),
    "notifications/prompts/list_changed": ("prompts/list", PromptsListChanged()),
}

#: ``ctx -> key``: whose credential a call reaches its upstream with (connections are pooled per key).
CredentialKey = Callable[[Context], Hashable]


class ProxyServer(MCPServer[Any]):
    """An ``MCPServer`` in front of one upstream, or of several under their names (a gateway).

    ``credentials``: by upstream name, what its connections are made with besides its entry's
    headers: headers or a ``requests`` auth object (an ``OAuthClientProvider``) for every caller,
    or ``lambda user: ...`` returning one of those per user of the host application the proxy
    is mounted in (``minimcp.server.app.proxy.upstream`` says how connections are then pooled).
    ``credential_key``: for a ``connection_factory`` that signs each caller in itself, the key of
    the caller's credential (pooled connections are kept per key, and the factory receives it).
    """

    def __init__(self, upstreams: Iterable[UpstreamSpec], name: str | None = None, *, gateway: bool = False,
                 connection_factory: ConnectionFactory = open_client, credential_key: CredentialKey | None = None,
                 credentials: Mapping[str, Credentials] | None = None,
                 max_connections: int | None = None, **options: Any) -> None:
        specs = list(upstreams)
        if not specs:
            raise ValueError("a proxy needs one upstream at least")
        credentials = dict(credentials or {})
        unknown = sorted(set(credentials) - {spec.name for spec in specs})
        if unknown:
            raise ProxyConfigError(f"credentials for {unknown}, which is no upstream of this proxy; its upstreams are "
                                   f"{[spec.name for spec in specs]}")
        if not gateway and len(specs) > 1:
            raise ValueError("several upstreams are served as a gateway: pass gateway=True, which names each one's "
                             "tools after it")
        extra = {} if max_connections is None else {"max_connections": max_connections}
        self.upstreams = {spec.name: Upstream(spec, connection_factory=connection_factory,
                                              on_notification=self._upstream_notified,
                                              credential=credentials.get(spec.name), user=self.host_user, **extra)
                          for spec in specs}
        self.mirrors = [Mirror(upstream, upstream.name if gateway else None) for upstream in self.upstreams.values()]
        self.gateway = gateway
        self.credential_key = credential_key
        for mirror in self.mirrors:
            mirror.credential_key = credential_key
        super().__init__(name or (f"{specs[0].name} (proxy)" if not gateway else "gateway"), **options)

    # --- what MCPServer looks up, falling through to the upstreams ------------------------------------
    def get_tool(self, name: Any) -> Tool | None:
        own = super().get_tool(name)
        if own is not None or not isinstance(name, str):
            return own
        for mirror in self.mirrors:
            tool = mirror.tool(name)
            if tool is not None:
                return tool
        return None

    def list_tools(self) -> list[ToolDefinition]:
        return super().list_tools() + self._gathered(lambda mirror: mirror.tools())

    def list_resources(self) -> list[ResourceDefinition]:
        return super().list_resources() + self._gathered(lambda mirror: mirror.resources())

    def list_resource_templates(self) -> list[TemplateDefinition]:
        return super().list_resource_templates() + self._gathered(lambda mirror: mirror.templates())

    def list_prompts(self) -> list[PromptDefinition]:
        return super().list_prompts() + self._gathered(lambda mirror: mirror.prompts())

    def _gathered(self, listing: Callable[[Mirror], list[Any]]) -> list[Any]:
        """Every upstream's part of a listing; in a gateway an upstream that fails is left out
        (logged, naming it), in a proxy of one its failure is the answer."""
        if not self.gateway:
            return listing(self.mirrors[0])
        found: list[Any] = []
        for mirror in self.mirrors:
            try:
                found.extend(listing(mirror))
            except MCPError as failed:
                logger.warning("listing upstream %r failed, its part is left out: %s", mirror.upstream.name, failed)
        return found

    def read_resource_result(self, uri: str, context: Context | None = None) -> ReadResourceResult | InputRequiredResult:
        try:
            return super().read_resource_result(uri, context)
        except ResourceNotFoundError:
            mirror = self._resource_mirror(str(uri))
            if mirror is None:
                raise
        return mirror.read(str(uri), context)

    def _resource_mirror(self, uri: str) -> Mirror | None:
        """The upstream that serves ``uri``: the only one, else the one listing it (or a template
        matching it)."""
        if not self.gateway:
            return self.mirrors[0]
        for mirror in self.mirrors:
            try:
                if any(str(resource.uri) == uri for resource in mirror.resources()):
                    return mirror
            except MCPError:
                continue
        for mirror in self.mirrors:
            try:
                templates = mirror.templates()
            except MCPError:
                continue
            for template in templates:
                try:
                    if UriTemplate.parse(template.uri_template).match(uri) is not None:
                        return mirror
                except InvalidUriTemplate:
                    continue
        return None

    def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> dict[str, Any]:
        """A legacy ``resources/subscribe`` of an upstream's resource subscribes upstream too, so
        that its updates reach the proxy (and from there its subscribers)."""
        uri = str(params.uri)
        mirror = None if uri in self._resources else self._resource_mirror(uri)
        if mirror is not None:
            mirror.upstream.subscribe(uri)
        return super()._subscribe(ctx, params)

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None,
                   context: Context | None = None) -> GetPromptResult | InputRequiredResult:
        if name in self._prompts:
            return super().get_prompt(name, arguments, context)
        for mirror in self.mirrors:
            if mirror.local(name) is not None:
                return mirror.prompt(name, arguments, context)
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")

    # --- tasks: an upstream's task keeps its upstream's name in its id ------------------------------------
    def _sync_extensions(self) -> None:
        """Advertise the tasks extension always: a mirrored call may be answered with an upstream's task."""
        super()._sync_extensions()
        self._lowlevel_server.extensions[TASKS_EXTENSION] = {}

    def _task_handler(self, method: str) -> Callable[[ServerRequestContext[Any, Any], Any], Any]:
        own = super()._task_handler(method)

        def handle(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
            wire = dict(ctx.params or {})
            upstream_name, _, task_id = str(wire.get("taskId", "")).partition("/")
            upstream = self.upstreams.get(upstream_name) if task_id else None
            if upstream is None:
                return own(ctx, params)
            wire["taskId"] = task_id
            wire.pop("_meta", None)

            def leg(connection: UpstreamConnection, responses: Any, state: Any, progress: Any) -> Any:
                return connection.client.session.send_request(method, wire, GetTaskResult if method == "tasks/get"
                                                              else Result)

            key = self.credential_key(Context(ctx, self)) if self.credential_key is not None else None
            answer = dump(forward(upstream, method, None, leg, key))
            if "taskId" in answer:
                answer["taskId"] = f"{upstream_name}/{answer['taskId']}"
            return answer

        return handle

    # --- what upstreams tell every client ---------------------------------------------------------------
    def _upstream_notified(self, upstream: Upstream, notification: Any) -> None:
        method = getattr(notification, "method", None)
        change = _CHANGES.get(str(method))
        if change is not None:
            stale, event = change
            for mirror in self.mirrors:
                if mirror.upstream is upstream:
                    mirror.forget(stale)
            self._publish(event)
        elif method == "notifications/resources/updated":
            self._publish(ResourceUpdated(uri=str(notification.params.uri)))

    def _publish(self, event: ServerEvent) -> None:
        self.subscriptions.publish(event)
        if not isinstance(event, ResourceUpdated):  # the bus tells a resource's legacy subscribers itself
            self.dispatcher.listens.announce(event_method(event))

    def close(self) -> None:
        for upstream in self.upstreams.values():
            upstream.close()
        super().close()
