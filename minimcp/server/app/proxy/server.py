"""``ProxyServer``: an ``MCPServer`` whose components are also those of its upstream; ``Gateway``:
one server of several upstreams, each a ``ProxyServer`` mounted under its name.

A proxy is a provider whose handlers are client calls to an upstream: each lookup the server
makes (a tool for ``tools/call``, a listing, a resource, a prompt, a completion, a task) falls
through to the upstream's :class:`~minimcp.server.app.proxy.provider.Mirror` when the proxy's own
registries do not have it, so tools registered on the proxy itself are served beside the mirrored
ones, and everything else of ``MCPServer`` (both eras, HTTP and stdio, middleware, filters, auth)
applies to the proxied calls unchanged. A proxy serves its upstream's names and URIs as they are.

A gateway names nothing itself: ``mount(proxy, namespace=upstream)`` does, by the rule of
``minimcp.server.app.mount`` (tool ``echo`` of upstream ``files`` is ``files_echo``, resource
``notes://today`` is ``notes://files/today``). A mounted proxy whose upstream fails its listing is
left out of the gateway's listing (logged, naming it) while the others are served.

An upstream's task keeps its upstream's name in its id (``files/7f3a...``): the proxy that
passed it on answers ``tasks/*`` for it, mounted or not (``MCPServer.relays_tasks``). A change
notification from an upstream drops its cached listing and is announced as the proxy's own list
change, which a server mounting it passes on to its clients; a 2026-07-28 upstream says it only
on a ``subscriptions/listen``, which the proxy keeps open while its clients want to hear
(:class:`~minimcp.server.app.proxy.upstream.Upstream` ``listen``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from minimcp.jsonrpc import MCPError
from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import ResourceNotFoundError
from minimcp.server.app.proxy.config import ProxyConfigError, UpstreamSpec
from minimcp.server.app.proxy.listen import UpstreamListen
from minimcp.server.app.proxy.provider import Mirror
from minimcp.server.app.proxy.relay import forward
from minimcp.server.app.proxy.upstream import ConnectionFactory, Credentials, Upstream, UpstreamConnection, open_client
from minimcp.server.app.server import MCPServer
from minimcp.server.app.tools import Tool
from minimcp.server.core.context import ServerRequestContext
from minimcp.shared.subscriptions import ResourceUpdated
from minimcp.shared.tasks import TASKS_EXTENSION, GetTaskResult
from minimcp.types import (
    CompleteResult,
    GetPromptResult,
    InputRequiredResult,
    ReadResourceResult,
    Result,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    dump,
)
from minimcp.types import Prompt as PromptDefinition
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition
from minimcp.types import Tool as ToolDefinition

logger = logging.getLogger("minimcp.server.proxy")

#: Upstream notification method -> (the listing it makes stale, the kind of list that changed).
_CHANGES: dict[str, tuple[str, Any]] = {
    "notifications/tools/list_changed": ("tools/list", "tool"),
    "notifications/resources/list_changed": ("resources/list", "resource"),
    "notifications/prompts/list_changed": ("prompts/list", "prompt"),
}

#: ``ctx -> key``: whose credential a call reaches its upstream with (connections are pooled per key).
CredentialKey = Callable[[Context], Hashable]


class MirroredComponent:
    """An upstream's resource, template or prompt as the proxy's rules and a mounting server see
    it: its name, no tags, its definition."""

    tags: frozenset[str] = frozenset()

    def __init__(self, definition: Any) -> None:
        self.name = definition.name
        self.meta = getattr(definition, "meta", None)
        self._definition = definition

    def definition(self) -> Any:
        return self._definition


class ProxyServer(MCPServer[Any]):
    """An ``MCPServer`` in front of one upstream (a ``Gateway`` mounts one per upstream).

    ``credentials``: by upstream name, what its connections are made with besides its entry's
    headers: headers or a ``requests`` auth object (an ``OAuthClientProvider``) for every caller,
    or ``lambda user: ...`` returning one of those per user of the host application the proxy
    is mounted in (``minimcp.server.app.proxy.upstream`` says how connections are then pooled).
    ``credential_key``: for a ``connection_factory`` that signs each caller in itself, the key of
    the caller's credential (pooled connections are kept per key, and the factory receives it).
    """

    relays_tasks = True

    def __init__(self, upstreams: Iterable[UpstreamSpec], name: str | None = None, *,
                 connection_factory: ConnectionFactory = open_client, credential_key: CredentialKey | None = None,
                 credentials: Mapping[str, Credentials] | None = None,
                 max_connections: int | None = None, **options: Any) -> None:
        specs = list(upstreams)
        if len(specs) != 1:
            raise ValueError(f"a ProxyServer stands in front of one upstream, not {len(specs)}: serve several with "
                             "Gateway(specs) (what create_proxy makes of an mcpServers configuration), which mounts "
                             "one ProxyServer per upstream under its name")
        spec = specs[0]
        unknown = sorted(set(credentials or {}) - {spec.name})
        if unknown:
            raise ProxyConfigError(f"credentials for {unknown}, which is no upstream of this proxy; its upstream is "
                                   f"{spec.name!r}")
        extra = {} if max_connections is None else {"max_connections": max_connections}
        self.upstream = Upstream(spec, connection_factory=connection_factory, on_notification=self._upstream_notified,
                                 credential=(credentials or {}).get(spec.name), user=self.host_user, **extra)
        self.mirror = Mirror(self.upstream)
        self.mirror.credential_key = credential_key
        #: The listen kept open to a 2026-07-28 upstream (``minimcp.server.app.proxy.listen``).
        self.listening = UpstreamListen(self.upstream, on_open=self.mirror.forget)
        self.credential_key = credential_key
        super().__init__(name or f"{spec.name} (proxy)", **options)
        self._serve_completions()

    # --- what MCPServer looks up, falling through to the upstream --------------------------------------
    def get_tool(self, name: Any) -> Tool | None:
        own = super().get_tool(name)
        if own is not None or not isinstance(name, str):
            return own
        return self.mirror.tool(name)

    def component(self, kind: Any, key: str) -> Any:
        """Own components first, then the upstream's as listed; a prompt is forwarded by name even
        unlisted (the upstream says whether it exists), so a mounting server finds every one."""
        own = super().component(kind, key)
        if own is not None or kind == "tool":
            return own
        found: list[Any]
        try:
            if kind == "resource":
                found = [d for d in self.mirror.resources() if str(d.uri) == key]
            elif kind == "template":
                found = [d for d in self.mirror.templates() if d.uri_template == key]
            else:
                found = [d for d in self.mirror.prompts() if d.name == key]
        except MCPError:
            found = []
        if found:
            return MirroredComponent(found[0])
        return MirroredComponent(PromptDefinition(name=key)) if kind == "prompt" else None

    def list_tools(self) -> list[ToolDefinition]:
        return super().list_tools() + self._listed(self.mirror.tools)

    def list_resources(self) -> list[ResourceDefinition]:
        return super().list_resources() + self._listed(self.mirror.resources)

    def list_resource_templates(self) -> list[TemplateDefinition]:
        return super().list_resource_templates() + self._listed(self.mirror.templates)

    def list_prompts(self) -> list[PromptDefinition]:
        return super().list_prompts() + self._listed(self.mirror.prompts)

    def _listed(self, listing: Callable[[], list[Any]]) -> list[Any]:
        """The upstream's part of a listing. Served alone, its failure is the answer; mounted (in a
        gateway), the part is left out (logged, naming the upstream) so the others are served. Once
        a client has seen a listing, the proxy listens for its changes (``listen``)."""
        self.listening.start()
        if not self._mounted_in:
            return listing()
        try:
            return listing()
        except MCPError as failed:
            logger.warning("listing upstream %r failed, its part is left out: %s", self.upstream.name, failed)
            return []

    def read_resource_result(self, uri: str, context: Context | None = None) -> ReadResourceResult | InputRequiredResult:
        try:
            return super().read_resource_result(uri, context)
        except ResourceNotFoundError:
            if str(uri) in self._resources:
                raise
        return self.mirror.read(str(uri), context)

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None,
                   context: Context | None = None) -> GetPromptResult | InputRequiredResult:
        if name in self._prompts or self._mounts:
            return super().get_prompt(name, arguments, context)
        return self.mirror.prompt(name, arguments, context)

    def complete(self, ref: Any, argument: Any, context: Any, ctx: Context | None = None) -> CompleteResult:
        """An own prompt's or template's completion by the proxy's handler, any other by the upstream."""
        own = ref.name in self._prompts if getattr(ref, "type", None) == "ref/prompt" else \
            getattr(ref, "uri", None) in self._templates
        if own or any(mount.completion_ref(ref) is not None for mount in self._mounts):
            return super().complete(ref, argument, context, ctx)
        return self.mirror.complete(ref, argument, context, ctx)

    # --- resource updates and list changes -----------------------------------------------------------
    def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> dict[str, Any]:
        """A legacy ``resources/subscribe`` of an upstream's resource subscribes upstream too, so
        that its updates reach the proxy (and from there its subscribers)."""
        answer = super()._subscribe(ctx, params)
        self.subscribe_upstream(str(params.uri))
        return answer

    def subscribe_upstream(self, uri: str) -> None:
        """Hear the upstream's updates of ``uri`` (not one of the proxy's own resources): on the
        listen of a 2026-07-28 upstream, by ``resources/subscribe`` on a legacy one."""
        if uri not in self._resources and not self.listening.want(uri):
            self.upstream.subscribe(uri)

    def _listen(self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> None:
        """A client's ``subscriptions/listen``: the proxy listens upstream too, for the resources asked."""
        self.listening.start()
        for uri in params.notifications.resource_subscriptions or ():
            self.subscribe_upstream(uri)
        super()._listen(ctx, params)

    # --- tasks: an upstream's task keeps its upstream's name in its id ------------------------------------
    def _sync_extensions(self) -> None:
        """Advertise the tasks extension always: a mirrored call may be answered with an upstream's task."""
        super()._sync_extensions()
        self._lowlevel_server.extensions[TASKS_EXTENSION] = {}

    def _routed_task(self, method: str, ctx: ServerRequestContext[Any, Any]) -> Any:
        """``tasks/*`` of a task the upstream runs (its id ``<upstream>/<upstream's id>``), answered
        upstream; ``None`` for any other."""
        wire = dict(ctx.params or {})
        prefix, _, task_id = str(wire.get("taskId", "")).partition("/")
        upstream = self.upstream
        if prefix != upstream.name or not task_id:
            return super()._routed_task(method, ctx)
        wire["taskId"] = task_id
        wire.pop("_meta", None)

        def leg(connection: UpstreamConnection, responses: Any, state: Any, progress: Any) -> Any:
            return connection.client.session.send_request(method, wire, GetTaskResult if method == "tasks/get"
                                                          else Result)

        key = self.credential_key(Context(ctx, self)) if self.credential_key is not None else None
        answer = dump(forward(upstream, method, None, leg, key))
        if "taskId" in answer:
            answer["taskId"] = f"{upstream.name}/{answer['taskId']}"
        return answer

    # --- what the upstream tells every client ---------------------------------------------------------
    def _upstream_notified(self, upstream: Upstream, notification: Any) -> None:
        method = getattr(notification, "method", None)
        change = _CHANGES.get(str(method))
        if change is not None:
            stale, kind = change
            self.mirror.forget(stale)
            self.notify_list_changed(kind)
        elif method == "notifications/resources/updated":
            self.subscriptions.publish(ResourceUpdated(uri=str(notification.params.uri)))

    def close(self) -> None:
        self.listening.close()
        self.upstream.close()
        super().close()


class Gateway(MCPServer[Any]):
    """One server of several upstreams: a ``ProxyServer`` per upstream, mounted under its name
    (``proxies``, by name). The keywords of ``ProxyServer`` apply to each; the others are this
    server's own (``MCPServer``'s)."""

    def __init__(self, upstreams: Iterable[UpstreamSpec], name: str | None = None, *,
                 connection_factory: ConnectionFactory = open_client, credential_key: CredentialKey | None = None,
                 credentials: Mapping[str, Credentials] | None = None, max_connections: int | None = None,
                 **options: Any) -> None:
        specs = list(upstreams)
        if not specs:
            raise ValueError("a gateway needs one upstream at least")
        unknown = sorted(set(credentials or {}) - {spec.name for spec in specs})
        if unknown:
            raise ProxyConfigError(f"credentials for {unknown}, which is no upstream of this gateway; its upstreams "
                                   f"are {[spec.name for spec in specs]}")
        super().__init__(name or "gateway", **options)
        self.proxies: dict[str, ProxyServer] = {}
        for spec in specs:
            given = (credentials or {}).get(spec.name)
            proxy = ProxyServer([spec], connection_factory=connection_factory, credential_key=credential_key,
                                credentials=None if given is None else {spec.name: given},
                                max_connections=max_connections)
            self.mount(proxy, namespace=spec.name)
            self.proxies[spec.name] = proxy

    def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> dict[str, Any]:
        """A legacy ``resources/subscribe`` of an upstream's resource subscribes upstream too."""
        answer = super()._subscribe(ctx, params)
        self._subscribe_upstream(str(params.uri))
        return answer

    def _listen(self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> None:
        """A client's ``subscriptions/listen``: each proxy listens upstream too, for the resources asked."""
        for proxy in self.proxies.values():
            proxy.listening.start()
        for uri in params.notifications.resource_subscriptions or ():
            self._subscribe_upstream(uri)
        super()._listen(ctx, params)

    def _subscribe_upstream(self, uri: str) -> None:
        for mount in self.mounts:
            inner = mount.names.inner_uri(uri)
            if inner is not None and isinstance(mount.child, ProxyServer):
                mount.child.subscribe_upstream(inner)
                return

    def close(self) -> None:
        for proxy in self.proxies.values():
            proxy.close()
        super().close()
