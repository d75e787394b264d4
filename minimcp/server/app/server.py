"""``MCPServer``: the registries, the decorators, and the low-level ``Server`` that serves them.

The server object holds what it serves (tools, resources, templates, prompts, one completion
handler) and registers each registry as a handler of a low-level ``Server`` (``on_list_tools``,
``on_call_tool``, ...), exactly as a hand-written low-level server would. It speaks no protocol
itself: the core behind that ``Server`` does, with one dispatch path for both tiers. What only
this tier has is here too: resolvers and body questions answered across 2026-07-28 rounds
(``requestState`` sealed with the request-state keys), pagination, and the tool error rule.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, create_model
from typing_extensions import TypeVar as TypeVarWithDefault
from typing_extensions import Unpack

from minimcp.jsonrpc import MCPError
from minimcp.server.auth.options import AuthOptions
from minimcp.server.backends import BackendSpec, resolve_backend
from minimcp.server.core.caching import CacheableMethod, CacheHint
from minimcp.server.core.context import ServerMiddleware, ServerRequestContext, ServerSession
from minimcp.server.app.extension import Extension, compose_tool_call_handler, intercepts_tool_calls
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.era import MODERN
from minimcp.server.core.options import LimitKeywords, Limits, gather, keyword_names, refuse_unknown
from minimcp.server.core.questions import NoQuestions, Questions
from minimcp.server.core.plan import Plan, listing
from minimcp.server.core.hooks import ServerHooks
from minimcp.server.core.server import (
    HTTP_OPTIONS_ELSEWHERE,
    Server,
    _synchronous,
    require_sync_handler,
    require_sync_lifespan,
)
from minimcp.server.core.shares import principal_of
from minimcp.server.app.context import Context, ReadResourceContents
from minimcp.server.app.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
)
from minimcp.server.app.mount import (
    ComponentKind,
    Mount,
    MountedComponent,
    MountedTool,
    MountLifespan,
    check_namespace,
    follow,
    reaches,
)
from minimcp.server.app.prompts import Prompt
from minimcp.server.app.resolve import ResolverKeys
from minimcp.server.app.resources import (
    FunctionResource,
    Resource,
    DEFAULT_RESOURCE_SECURITY,
    ResourceSecurity,
    ResourceSecurityError,
    ResourceTemplate,
    is_template,
    to_contents,
)
from minimcp.server.core.sealing import RequestStateSecurity
from minimcp.server.app.signature import read_signature, require_sync
from minimcp.server.app.tools import TaskSupport, Tool, as_listed, failure_result
from minimcp.server.app.visibility import KINDS, ComponentFilter, Kind, Visibility
from minimcp.server.app.tasks.manager import TaskManager
from minimcp.server.core.ports import Stores, SubscriptionBus
from minimcp.server.app.tasks.options import TaskKeywords, TaskOptions
from minimcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
    event_method,
)
from minimcp.shared.extension import declares_extension, extension_required_data, validate_extension_identifier
from minimcp.shared.tasks import TASKS_EXTENSION, CreateTaskResult
from minimcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    GetPromptRequestParams,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParams,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from minimcp.types import Prompt as PromptDefinition
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition
from minimcp.types import Tool as ToolDefinition

if TYPE_CHECKING:
    from minimcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
    from minimcp.server.auth.settings import AuthSettings
    from minimcp.server.edges.memory import InMemoryEndpoint
    from minimcp.server.edges.wsgi import MCPWSGIApp, WSGIAppKeywords

logger = logging.getLogger("minimcp.server")
#: What the lifespan yields; ``Any`` for a server without one, so ``mcp = MCPServer("name")`` type-checks as is.
LifespanT = TypeVarWithDefault("LifespanT", default=Any)
F = TypeVar("F", bound=Callable[..., Any])

#: How many entries one page of a list result holds.
PAGE_SIZE = 100


def _page(items: list[Any], cursor: str | None) -> tuple[list[Any], str | None]:
    """One page of a list and the opaque cursor of the next; a bad cursor is -32602."""
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(cursor.encode()).decode())
        except (ValueError, UnicodeDecodeError):
            raise MCPError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from None
        if not 0 <= start <= len(items):
            raise MCPError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    end = start + PAGE_SIZE
    following = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else None
    return items[start:end], following


def _rounds_unparsed(params_type: type[BaseModel]) -> type[BaseModel]:
    """``params_type`` with ``inputResponses`` and ``requestState`` left raw: this tier checks each
    answer against the question it answers and refuses any unusable state with the one frozen
    error (``rounds.open_book``)."""
    return create_model(params_type.__name__, __base__=params_type, input_responses=(Any, None),
                        request_state=(Any, None))


_ToolCall = _rounds_unparsed(CallToolRequestParams)
_ResourceRead = _rounds_unparsed(ReadResourceRequestParams)
_PromptGet = _rounds_unparsed(GetPromptRequestParams)


class _NamedCall(NamedTuple):
    """What ``MCPServer``'s own ``tools/call`` handler reads of its params."""

    name: str
    arguments: dict[str, Any] | None


def _read_tool_call(params: dict[str, Any]) -> Any:
    """``tools/call`` params as ``MCPServer._call_tool`` reads them. Of decoded JSON, validating
    ``_ToolCall`` checks only that ``name``, ``arguments`` and ``_meta`` have their types (its other
    fields are kept raw or let through), so params where they do are taken as they came; anything
    else is validated, and refused as before."""
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    if type(name) is str and (arguments is None or type(arguments) is dict) and (meta is None or type(meta) is dict):
        return _NamedCall(name, arguments)
    return _ToolCall.model_validate(params)


@dataclass
class Settings:
    debug: bool
    log_level: str
    warn_on_duplicate_tools: bool
    warn_on_duplicate_resources: bool
    warn_on_duplicate_prompts: bool
    dependencies: list[str]
    auth: AuthSettings | None = None


class MCPServerKeywords(LimitKeywords, TaskKeywords, total=False):
    """The keywords of ``MCPServer`` beyond the official ones: ``Limits``' and ``TaskOptions``'
    fields, where the server keeps its state, and who may see and hear what."""

    #: Where what outlives a request is kept (``minimcp.server.backends``; default: this process's
    #: memory); the request-state keys, the bus and the tasks follow it unless given their own.
    backend: BackendSpec
    #: Whether a tool body may ask the client (``ctx.elicit``) on 2026-07-28 too, the call being
    #: replayed with the answer (default ``True``); ``False`` refuses it, as the official SDK does.
    elicit_replay: bool
    #: ``(ctx, component) -> bool``: whether this request's caller sees and may use ``component``.
    component_filter: ComponentFilter | None
    #: ``(ctx, uri) -> bool``: whether this request's caller may hear ``uri``'s updates.
    subscription_filter: Callable[[Context, str], bool] | None


def _misused(decorator: str, target: Any) -> None:
    if callable(target) and not isinstance(target, str):
        raise TypeError(f"The @{decorator} decorator was used incorrectly. Did you forget to call it? "
                        f"Use @{decorator}() instead of @{decorator}")


def _read_through(name: str) -> Any:
    """A read-only attribute of ``MCPServer`` that is its low-level server's attribute ``name``."""
    return property(lambda self: getattr(self._lowlevel_server, name), doc=f"The low-level server's ``{name}``.")


class _Discard(Outbox):
    """The outbox of a direct ``mcp.call_tool(...)``: there is no client to tell anything."""

    def __init__(self) -> None:
        super().__init__(can_request=False)

    def _deliver(self, message: dict[str, Any], final: bool) -> None:
        return None


class MCPServer(Generic[LifespanT]):
    """An MCP server: register tools, resources and prompts, then ``run()`` or mount ``wsgi_app()``."""

    #: Whether listings depend on who asks (a host filters tools by permission): a public cache hint on
    #: a 2026-07-28 list result then says ``cacheScope: "private"``, so no shared cache hands one
    #: user's list to another.
    listings_vary_by_user = False
    #: Whether this server's tools may answer with tasks it does not keep (a proxy's: its upstream's),
    #: whose ``tasks/*`` it answers itself (``_routed_task``); a server mounting it sends them there.
    relays_tasks = False

    def __init__(
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[Any] | None = None,
        version: str = "",
        *,
        tools: list[Tool] | None = None,
        resources: list[Resource] | None = None,
        debug: bool = False,
        log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO",
        warn_on_duplicate_tools: bool = True,
        warn_on_duplicate_resources: bool = True,
        warn_on_duplicate_prompts: bool = True,
        dependencies: list[str] | None = None,
        lifespan: Callable[[MCPServer[LifespanT]], AbstractContextManager[LifespanT]] | None = None,
        request_state_security: RequestStateSecurity | None = None,
        auth: AuthSettings | None = None,
        token_verifier: TokenVerifier | None = None,
        auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
        subscriptions: SubscriptionBus | Literal[False] | None = None,
        resource_security: ResourceSecurity = DEFAULT_RESOURCE_SECURITY,
        cache_hints: Mapping[CacheableMethod, CacheHint] | None = None,
        extensions: Sequence[Extension] | None = None,
        middleware: Sequence[ServerMiddleware[Any]] | None = None,
        limits: Limits | None = None,
        tasks: TaskOptions | None = None,
        **options: Unpack[MCPServerKeywords],
    ) -> None:
        keywords: dict[str, Any] = dict(options)
        limits = gather("MCPServer", "limits", limits, Limits, keywords)
        #: Where the tasks are kept and how many bodies run at once (``TaskOptions``).
        self.task_options = gather("MCPServer", "tasks", tasks, TaskOptions, keywords)
        backend: BackendSpec = keywords.pop("backend", None)
        elicit_replay: bool = keywords.pop("elicit_replay", True)
        component_filter: ComponentFilter | None = keywords.pop("component_filter", None)
        subscription_filter: Callable[[Context, str], bool] | None = keywords.pop("subscription_filter", None)
        refuse_unknown("MCPServer", keywords, keyword_names(MCPServerKeywords) | {"limits", "tasks"},
                       HTTP_OPTIONS_ELSEWHERE)
        require_sync_lifespan(lifespan)
        if request_state_security is not None and request_state_security.explicit and not name \
                and request_state_security.audience is None:
            raise ValueError(
                "request_state_security is configured but this server has no name. Name the server "
                "(MCPServer('name', ...)) or pass audience= to RequestStateSecurity, so that states minted for "
                "another server are refused."
            )
        self._name = name
        #: What ``wsgi_app()`` protects the endpoint with, as given (``AuthOptions``).
        self.auth_options = AuthOptions(auth=auth, token_verifier=token_verifier,
                                        auth_server_provider=auth_server_provider)
        if self.auth_options.given:
            from minimcp.server.auth.resource_server import check_auth_options

            check_auth_options(auth, token_verifier, auth_server_provider)
        self.settings = Settings(debug, log_level, warn_on_duplicate_tools, warn_on_duplicate_resources,
                                 warn_on_duplicate_prompts, list(dependencies or []), auth)
        self._own_request_state_security = request_state_security
        self.elicit_replay = elicit_replay
        #: What a template argument may hold, for templates registered without their own ``security=``.
        self.resource_security = resource_security
        self._resolver_keys = ResolverKeys()
        # _registry_lock guards the registries below; reads take a snapshot under it.
        self._registry_lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self._completion: Callable[..., Any] | None = None
        # _mounts is replaced whole under _registry_lock (a tuple: readers take it as it is).
        self._mounts: tuple[Mount, ...] = ()
        # The servers this one is mounted in, once each: told of its list changes and of a completion
        # handler it gains (``_announce_to_clients``, ``_serve_completions``); appended to under
        # _registry_lock, read as a copy.
        self._mounted_in: list[MCPServer[Any]] = []
        #: Which components are on (``enable``/``disable``), for every caller.
        self.visibility = Visibility()
        #: ``(ctx, component) -> bool``: whether this request's caller sees and may use ``component``.
        self.component_filter = component_filter
        #: ``(ctx, uri) -> bool``: whether this request's caller may hear ``uri``'s updates (a listen
        #: leaves the others out of what it honours; a legacy ``resources/subscribe`` is refused).
        self.subscription_filter = subscription_filter
        self._lowlevel_server: Server[Any] = Server(
            self.name, version=version, title=title, description=description, instructions=instructions,
            website_url=website_url, icons=icons, lifespan=lambda _: self._lifespans(lifespan),
            cache_hints=cache_hints,
            hooks=ServerHooks(
                planner=self, list_tool_scopes=self.tool_scopes,
                call_scope=self._call_scope_hook(), keys_per_process=lambda: not self.request_state_security.explicit,
                auth_options=self.auth_options),
            limits=limits, middleware=middleware or (),
            # Advertised as the official MCPServer advertises: no legacy listChanged, subscribe or logging
            # (the legacy methods are answered all the same); on 2026-07-28 what subscriptions/listen serves.
            unadvertised=("logging/setLevel", "resources/subscribe", "resources/unsubscribe"),
            on_list_tools=self._list_tools, on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates, on_list_prompts=self._list_prompts,
            on_subscribe_resource=self._subscribe, on_unsubscribe_resource=_unsubscribe,
            on_subscriptions_listen=None if subscriptions is False else self._listen, backend=backend,
        )
        low = self._lowlevel_server
        self._own_subscriptions = subscriptions or None
        self.use_backend(low.backend)
        low.add_request_handler("tools/call", _ToolCall, self._call_tool, read=_read_tool_call)
        low.add_request_handler("resources/read", _ResourceRead, self._read_resource)
        low.add_request_handler("prompts/get", _PromptGet, self._get_prompt)
        low.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)
        #: The tasks of this server: ``task_store`` keeps them, ``task_channel`` carries word between the
        #: processes sharing that store (``RedisTaskStore`` and ``RedisTaskChannel``; see ``TaskManager``);
        #: by default the backend's (this process's memory, or a shared backend's Redis).
        self.tasks = self._task_manager()
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            low.add_request_handler(method, RequestParams, self._task_handler(method))
        for tool in tools or []:
            self._tools[tool.name] = tool
        self._sync_extensions()
        for resource in resources or []:
            self.add_resource(resource)
        #: The extensions this server was built with (``MCPServer(extensions=[...])``), in order.
        self.extensions: tuple[Extension, ...] = ()
        for extension in extensions or ():
            self._apply_extension(extension)
        intercepted = any(intercepts_tool_calls(extension) for extension in extensions or ())
        if intercepted:
            low.add_request_handler("tools/call", _ToolCall, compose_tool_call_handler(self.extensions, self._call_tool))
        #: Whether ``tools/call`` may answer a tool's plain return in wire form: only when no
        #: subclass's ``call_tool`` and no intercepting extension reads the ``CallToolResult`` (the
        #: middleware sees the wire form either way). Fixed here, as the extensions are.
        self._answers_in_wire_form = type(self).call_tool is MCPServer.call_tool and not intercepted

    @property
    def name(self) -> str:
        return self._name or "mcp-server"

    @property
    def backend(self) -> Stores:
        """Where what outlives a request is kept (``minimcp.server.backends``)."""
        return self._lowlevel_server.backend

    def use_backend(self, backend: BackendSpec) -> None:
        """Keep the shared state in ``backend`` from now on: what a host does that reads it from its
        configuration after building the server (Flask's ``MINIMCP_BACKEND``). The bus, the
        request-state keys and the tasks follow it unless they were given explicitly; a shared backend makes every
        requestState single-use, an explicitly configured one too."""
        low = self._lowlevel_server
        low.backend = resolve_backend(backend, self.name)
        security = self._own_request_state_security
        if security is None:
            security = RequestStateSecurity.from_backend(low.backend)
        elif low.backend.shared and security.spend is None:
            security.spend = low.backend.spend_request_state
        self.request_state_security = security
        #: Where ``ctx.notify_*`` publishes: the backend's bus (every process of a shared backend), or
        #: the ``subscriptions=`` bus given. ``subscriptions=False`` leaves ``subscriptions/listen``
        #: unserved, the bus still reaches legacy clients.
        self.subscriptions: SubscriptionBus = self._own_subscriptions or low.backend.subscription_bus()
        low.dispatcher.listens.follow(self.subscriptions)
        if "tasks" in self.__dict__:  # a host's late backend: the tasks follow it too
            self.tasks.close()
            self.tasks = self._task_manager()

    def _task_manager(self) -> TaskManager:
        """The task manager over the ``task_store=`` and ``task_channel=`` given, else the backend's."""
        options = self.task_options
        backend = self._lowlevel_server.backend
        store = options.task_store if options.task_store is not None else backend.task_store()
        channel = options.task_channel if options.task_channel is not None else backend.task_channel()
        return TaskManager(self, store, max_running=options.max_task_workers,
                           max_running_per_principal=options.max_task_workers_per_principal, channel=channel,
                           executor=options.task_executor)

    # --- what the low-level server holds: identity, the core, the pool, the routes ---------------
    title = _read_through("title")
    description = _read_through("description")
    instructions = _read_through("instructions")
    website_url = _read_through("website_url")
    icons = _read_through("icons")
    version = _read_through("version")
    server_info = _read_through("server_info")
    dispatcher = _read_through("dispatcher")
    pool = _read_through("pool")
    limits = _read_through("limits")
    custom_routes = _read_through("custom_routes")
    #: ``(ctx, call_next)`` layers around every message, outermost first: the low-level server's list.
    middleware = _read_through("middleware")

    def lifespan_context(self) -> Any:
        """What the lifespan yielded, entering it on first use in this process."""
        return self._lowlevel_server.lifespan_context()

    def new_lifespan(self) -> AbstractContextManager[Any]:
        """A fresh, not yet entered lifespan (with the lifespans of the servers mounted in this
        one inside it): what an in-memory connection enters, and a parent enters for its mounts."""
        return self._lowlevel_server.new_lifespan()

    @contextlib.contextmanager
    def _lifespans(self, lifespan: Callable[[MCPServer[LifespanT]], AbstractContextManager[LifespanT]] | None
                   ) -> Iterator[Any]:
        """This server's lifespan and, inside it, each mounted server's (``MountLifespan``: one per
        child, however often it is mounted), entered in the order mounted and exited in reverse;
        what it yields is this server's own value."""
        with contextlib.ExitStack() as stack:
            value = stack.enter_context(_synchronous(lifespan(self))) if lifespan is not None else {}
            for held in {id(mount.lifespan): mount.lifespan for mount in self._mounts}.values():
                stack.enter_context(held.held())
            yield value

    def close(self) -> None:
        """End open listens, exit the lifespan (and the mounted servers' inside it) and stop the
        worker pool; blocked workers wake with "Connection closed"."""
        self.tasks.close()
        self._lowlevel_server.close()
        for mount in self._mounts:
            mount.lifespan.close()

    # --- composition -----------------------------------------------------------------------------
    def mount(self, server: MCPServer[Any], namespace: str | None = None) -> None:
        """Serve ``server``'s tools, resources, templates and prompts as this server's own, live.

        ``namespace="billing"`` prefixes them: tool ``create_invoice`` -> ``billing_create_invoice``
        (prompts likewise), resource ``invoice://2024/7`` -> ``invoice://billing/2024/7``
        (templates likewise); ``None`` serves them under their own names. This server's own
        components come first, then the mounts in the order made (``minimcp.server.app.mount``
        has the whole rule). What is added to, removed from, enabled or disabled on ``server``
        later shows at once, and this server's clients hear ``list_changed``; this server's
        ``enable``/``disable``, tags, ``component_filter`` and a mounted tool's ``required_scopes``
        apply on top of ``server``'s own. ``server``'s middleware wraps its own components'
        requests only, and its lifespan runs inside this server's.

        The same server may be mounted under several namespaces; mounting a server into itself,
        or into one mounted in it, is refused (``ValueError``), as is mounting it twice under one
        namespace.
        """
        if not isinstance(server, MCPServer):
            raise TypeError(f"mount() takes an MCPServer, got {type(server).__name__}; "
                            "MCPServer.as_proxy(...) makes one of a remote server")
        namespace = check_namespace(namespace)
        if server is self:
            raise ValueError(f"Cannot mount server {self.name!r} into itself")
        if reaches(server, self):
            raise ValueError(f"Cannot mount server {server.name!r} into {self.name!r}: {self.name!r} is already "
                             f"mounted in {server.name!r} (at some depth), which would make a cycle; mount both into a third server")
        with self._registry_lock:
            if any(mount.child is server and mount.namespace == namespace for mount in self._mounts):
                raise ValueError(f"Server {server.name!r} is already mounted in {self.name!r} under namespace "
                                 f"{namespace!r}; mount it under another namespace")
            first = next((mount for mount in self._mounts if mount.child is server), None)
            lifespan = first.lifespan if first is not None else MountLifespan(server)
            self._mounts = (*self._mounts, Mount(self, server, namespace, lifespan))
        if server.relays_tasks:
            self._sync_extensions()
        if server.capabilities().completions is not None:
            self._serve_completions()
        if first is None:
            follow(self, server)
            with server._registry_lock:
                server._mounted_in.append(self)
        for kind in KINDS:
            self._registry_changed(kind)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The servers mounted in this one (``mount``), in the order mounted."""
        return self._mounts

    def component(self, kind: ComponentKind, key: str) -> Any:
        """The component of ``kind`` (``"tool"``, ``"resource"``, ``"template"``, ``"prompt"``)
        registered under ``key`` (a name, a resource's URI, a template's URI template), a mounted
        server's included, under the name this server serves it by; ``None`` when there is none.
        Whether it is enabled is not asked."""
        if kind == "tool":
            return self.get_tool(key)
        found = self._registry(kind).get(key)
        if found is None:
            for mount in self._mounts:
                found = mount.component(kind, key)
                if found is not None:
                    break
        return found

    def _mounted(self, kind: ComponentKind) -> list[Any]:
        """What the mounts list of ``kind``, prefixed, leaving out what an own component or an
        earlier mount already claims (the first serves it)."""
        taken = set(self._registry(kind))
        found = []
        for mount in self._mounts:
            for component in mount.tools() if kind == "tool" else mount.components(kind):
                key = _served_key(kind, component)
                if key not in taken:
                    taken.add(key)
                    found.append(component)
        return found

    def _registry(self, kind: ComponentKind) -> Mapping[str, Any]:
        registries: dict[str, Mapping[str, Any]] = {
            "tool": self._tools, "resource": self._resources, "template": self._templates, "prompt": self._prompts}
        return registries[kind]

    def _filtered(self) -> bool:
        """Whether what a caller sees depends on who asks: a ``component_filter`` here or in a mount."""
        return self.component_filter is not None or any(mount.child._filtered() for mount in self._mounts)

    def notify_list_changed(self, kind: Kind) -> None:
        """Tell this server's clients, and those of every server it is mounted in, that its
        ``kind`` listing (``"tool"``, ``"resource"``, ``"prompt"``) changed: the listens through its
        bus, the legacy sessions on their standalone channel. ``enable``/``disable`` call it, and a
        mounted server's ``add_*``/``remove_*``; a server whose components come from elsewhere
        (a proxy) calls it when they change there."""
        change = _CHANGES[kind]
        self.subscriptions.publish(change)
        self._announce_to_clients(event_method(change))

    def _announce_to_clients(self, method: str) -> None:
        """A list change to this server's legacy sessions and to its parents' (their listens hear
        it through the bus relay, ``mount.follow``)."""
        self.dispatcher.listens.announce(method)
        for parent in list(self._mounted_in):
            parent._announce_to_clients(method)

    def _registry_changed(self, kind: Kind) -> None:
        """A component was added or removed: announced where this server is mounted, whose clients
        cannot see this server's own handlers tell them (unmounted, a server announces nothing of
        its own accord, as officially: a handler calls ``ctx.session.send_tool_list_changed()``)."""
        if self._mounted_in:
            self.notify_list_changed(kind)

    def _call_mounted_tool(self, name: str, arguments: dict[str, Any] | None, context: Context | None,
                           wire: bool, tool: Tool | None = None) -> Any:
        """Run tool ``name`` (``tool``, as the parent's plan found it) for a request a server that
        mounts this one received (``Mount.call_tool``): this server's rules and component filter
        apply, and a task tool runs as a plain call (``mount``'s docstring says why). A subclass's
        ``call_tool`` (a proxy's, say) is used where there is one."""
        if type(self).call_tool is not MCPServer.call_tool:
            return self.call_tool(name, arguments, context=context)
        found = self._tool_to_call(name, context, tool)
        if context is None and found.needs_context:
            context = self._detached_context()
        return found.run(arguments, context, wire)

    # --- the host application (minimcp.flask, minimcp.django override these) ----------------------
    def call_scope(self) -> AbstractContextManager[Any]:
        """The context every handler of one request runs in, on its worker thread.

        Called on the thread that received the request, while the host framework's context (its
        request, its logged-in user) is still there; the context manager it returns is entered on
        the worker around the handler (tool, resolvers, resource, prompt) and exited when it ends.
        A host captures what it needs here and re-establishes it there.
        """
        return contextlib.nullcontext()

    def _call_scope_hook(self) -> Callable[[], AbstractContextManager[Any]]:
        """``call_scope`` as the core's hook: where a class leaves it as it is here, the hook is
        ``contextlib.nullcontext``, which the core knows to enter nothing for (it wraps every call)."""
        return self.call_scope if type(self).call_scope is not MCPServer.call_scope else contextlib.nullcontext

    def host_user(self) -> Any:
        """The host application's user of the current call (``ctx.user``): a mounted server's is
        that of a server it is mounted in (a proxy mounted in a Flask or Django host learns whose
        credential a call needs); ``None`` outside a host."""
        for parent in list(self._mounted_in):
            user = parent.host_user()
            if user is not None:
                return user
        return None

    def capabilities(self, protocol_version: str | None = None) -> ServerCapabilities:
        return self._lowlevel_server.get_capabilities(protocol_version=protocol_version)

    # --- the handlers this tier registers on its low-level server -------------------------------
    def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams) -> ListToolsResult:
        shown = self._for_caller(ctx, self.list_tools(), lambda d: self.get_tool(d.name), "tool")
        page, cursor = _page(shown, params.cursor)
        return ListToolsResult(tools=[as_listed(tool, ctx.session.legacy) for tool in page], next_cursor=cursor)

    def _list_resources(self, ctx: ServerRequestContext[Any, Any],
                        params: PaginatedRequestParams) -> ListResourcesResult:
        shown = self._for_caller(ctx, self.list_resources(), lambda d: self.component("resource", str(d.uri)),
                                 "resource")
        page, cursor = _page(shown, params.cursor)
        return ListResourcesResult(resources=page, next_cursor=cursor)

    def _list_resource_templates(self, ctx: ServerRequestContext[Any, Any],
                                 params: PaginatedRequestParams) -> ListResourceTemplatesResult:
        shown = self._for_caller(ctx, self.list_resource_templates(),
                                 lambda d: self.component("template", d.uri_template), "resource")
        page, cursor = _page(shown, params.cursor)
        return ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    def _list_prompts(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams) -> ListPromptsResult:
        shown = self._for_caller(ctx, self.list_prompts(), lambda d: self.component("prompt", d.name), "prompt")
        page, cursor = _page(shown, params.cursor)
        return ListPromptsResult(prompts=page, next_cursor=cursor)

    def _for_caller(self, ctx: ServerRequestContext[Any, Any], listed: list[Any], find: Callable[[Any], Any],
                    kind: Kind) -> list[Any]:
        """The listed definitions this request's caller may see (``component_filter``, a mounted
        server's too, and for an app's ``ui://`` resource its tools'); a definition ``find`` finds
        no component for (added by an override) is left to whoever added it."""
        if self.component_filter is None and not (self._mounts and self._filtered()):
            return listed
        context = Context(ctx, self)
        components = [find(definition) for definition in listed]
        return [definition for definition, component in zip(listed, components)
                if component is None or self._usable(kind, component, context) is None]

    def _usable(self, kind: Kind, component: Any, context: Context | None) -> str | None:
        """Why ``component`` cannot be used now: ``"disabled"``, ``"hidden"`` from this caller by
        the filter (a request's ``context`` only: an in-process call has no caller), or ``None``.
        An app's ``ui://`` resource is usable while one of the tools it renders is (``_ui_tools``)."""
        visibility = self.visibility
        if visibility.rules and not visibility.enabled(kind, component):
            return "disabled"
        if context is not None and self.component_filter is not None and \
                not self.component_filter(context, component):
            return "hidden"
        if self._mounts and isinstance(component, (MountedTool, MountedComponent)) and component.inner is not None:
            refused = component.mount.usable(kind, component.inner, context)
            if refused is not None:
                return refused
        tools = self._ui_tools(component) if kind == "resource" else []
        if not tools:
            return None
        why = [self._usable("tool", tool, context) for tool in tools]
        return None if None in why else "hidden" if "hidden" in why else "disabled"

    def _ui_tools(self, resource: Any) -> list[Tool]:
        """The tools that name ``resource`` as their UI (MCP Apps: ``_meta.ui.resourceUri``, a
        ``ui://`` URI): the resource shows only while one of them does, so that tags, ``disable``
        and a ``component_filter`` hiding a tool hide its app too."""
        uri = getattr(resource, "uri", None)
        if not (isinstance(uri, str) and uri.startswith("ui://")):
            return []
        with self._registry_lock:
            tools = list(self._tools.values())
        return [tool for tool in tools if _ui_uri(tool.meta) == uri]

    # --- enabling and disabling at run time ------------------------------------------------------
    def enable(self, *names: str, tags: Iterable[str] | None = None, kind: Kind | None = None) -> None:
        """Turn on the tools, resources and prompts named (by name, or a resource's URI) or tagged;
        ``kind="tool"`` limits it to one kind. Later calls override earlier ones. Clients hear
        ``list_changed`` for each kind whose listing changed."""
        self._apply_rule(Visibility.rule(names, tags, kind, True))

    def disable(self, *names: str, tags: Iterable[str] | None = None, kind: Kind | None = None) -> None:
        """Turn off what is named or tagged, as :meth:`enable` selects it: it leaves every listing
        and a call to it fails with an error saying it is disabled. Applies to components registered
        later too."""
        self._apply_rule(Visibility.rule(names, tags, kind, False))

    def _apply_rule(self, rule: Any) -> None:
        before = self._enabled_keys()
        self.visibility.add(rule)
        after = self._enabled_keys()
        for kind in KINDS:
            if before[kind] != after[kind]:
                self.notify_list_changed(kind)

    def _enabled_keys(self) -> dict[str, set[Any]]:
        """What is enabled of each kind: own components by identity, mounted ones (made anew
        for each look) by the key they are served under."""
        with self._registry_lock:
            registries: dict[Kind, list[Any]] = {
                "tool": list(self._tools.values()), "prompt": list(self._prompts.values()),
                "resource": [*self._resources.values(), *self._templates.values()]}
        keys: dict[str, set[Any]] = {kind: {id(c) for c in components if self._usable(kind, c, None) is None}
                                     for kind, components in registries.items()}
        if self._mounts:
            served: tuple[tuple[Kind, ComponentKind], ...] = (
                ("tool", "tool"), ("prompt", "prompt"), ("resource", "resource"), ("resource", "template"))
            for kind, mounted in served:
                keys[kind] |= {f"{mounted}:{_served_key(mounted, c)}" for c in self._mounted(mounted)
                               if self._usable(kind, c, None) is None}
        return keys

    def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        """``tools/call``: a failing tool is an ``is_error`` result the model can read; a crash's own
        text stays in the server log with its traceback."""

        plan = ctx.plan
        if plan is None or plan.name != params.name:  # a middleware passed another name on
            plan = self.plan("tools/call", {"name": params.name})
        # A silent call of the tool its plan found, answered in wire form, needs no Context: its
        # function takes none, it settles no resolvers, it is no task, and no filter looks at it.
        bare = plan.silent and plan.target is not None and self._answers_in_wire_form

        def call(questions: Questions, answers: dict[str, Any] | None, state: str | None) -> Any:
            def context() -> Context | None:
                return None if bare else Context(ctx, self, questions, answers, state)

            try:
                if self._answers_in_wire_form:
                    return self._run_tool(params.name, params.arguments, context, wire=True, tool=plan.target)
                return self.call_tool(params.name, params.arguments, context=context())
            except ToolError as failure:
                return failure_result(failure)

        return ctx.session.connection.era.rounds(ctx, self.request_state_security, self.name, call, not plan.silent)

    def _read_resource(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        """``resources/read``: not found is -32602, any other failure -32603 with its message (a
        crash's own text stays in the server log), both with the URI in ``data``, in both eras."""
        uri = str(params.uri)

        def read(context: Context) -> Any:
            try:
                return self.read_resource_result(uri, context=context)
            except ResourceError as failure:
                if isinstance(failure, UnexpectedResourceError):
                    logger.error("%s", failure, exc_info=failure.__cause__ or failure)
                else:
                    logger.info("Resource %r failed: %r", uri, str(failure))
                code = INVALID_PARAMS if isinstance(failure, ResourceNotFoundError) else INTERNAL_ERROR
                raise MCPError(code, str(failure), {"uri": uri}) from None

        return self._with_rounds(ctx, read)

    def _get_prompt(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return self._with_rounds(ctx, lambda context: self.get_prompt(params.name, params.arguments, context=context))

    def _complete(self, ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        return self.complete(params.ref, params.argument, params.context, Context(ctx, self))

    def _listen(self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> None:
        assert ctx.outbox is not None and ctx.request_id is not None
        context = Context(ctx, self)
        tasks = self.tasks.listen_filter((ctx.params or {}).get("notifications"), context)
        wanted = params.notifications
        if self.subscription_filter is not None and wanted.resource_subscriptions:
            allowed = [uri for uri in wanted.resource_subscriptions if self.subscription_filter(context, uri)]
            wanted = wanted.model_copy(update={"resource_subscriptions": allowed})
        self.dispatcher.listens.open(ctx.request_id, wanted, ctx.outbox, extra=tasks,
                                     principal=principal_of(ctx.transport, ctx.session.connection))

    def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> dict[str, Any]:
        uri = str(params.uri)
        if self.subscription_filter is not None and not self.subscription_filter(Context(ctx, self), uri):
            raise MCPError(INVALID_PARAMS, f"Not allowed to subscribe to {uri}")
        ctx.session.connection.subscriptions.add(uri)
        return {}

    def _with_rounds(self, ctx: ServerRequestContext[Any, Any], run: Callable[[Context], Any]) -> Any:
        """Run a handler that may ask, given its ``Context``, as the request's era runs one
        (``Era.rounds``; ``_call_tool`` asks it itself, as a tool's call may be unable to ask and
        its Context is made last)."""
        return ctx.session.connection.era.rounds(
            ctx, self.request_state_security, self.name,
            lambda questions, answers, state: run(Context(ctx, self, questions, answers, state)))

    def _sync_extensions(self) -> None:
        """Advertise the tasks extension exactly while some tool runs as a task, or a mounted server
        passes on tasks of its own (``relays_tasks``)."""
        with self._registry_lock:
            serves_tasks = any(tool.task is not None for tool in self._tools.values()) or \
                any(mount.child.relays_tasks for mount in self._mounts)
        if serves_tasks:
            self._lowlevel_server.extensions[TASKS_EXTENSION] = {}
        else:
            self._lowlevel_server.extensions.pop(TASKS_EXTENSION, None)

    def _apply_extension(self, extension: Extension) -> None:
        """Register what one extension adds and advertise its settings; fixed at construction, so a
        clash (a second extension of one identifier, a method already served) fails here."""
        identifier = validate_extension_identifier(getattr(extension, "identifier", None),
                                                   owner=type(extension).__name__)
        if any(known.identifier == identifier for known in self.extensions):
            raise ValueError(f"Extension {identifier!r} is already registered")
        if intercepts_tool_calls(extension):
            require_sync_handler("tools/call interceptor", extension.intercept_tool_call)
        self.extensions += (extension,)
        for tool in extension.tools():
            self.add_tool(tool.fn, meta=tool.meta, **tool.kwargs)
        for resource in extension.resources():
            self.add_resource(resource.resource)
        low = self._lowlevel_server
        for binding in extension.methods():
            if low.get_request_handler(binding.method) is not None:
                raise ValueError(f"Extension {identifier!r} binds method {binding.method!r}, which is already served; "
                                 "extension methods are additive and cannot replace another handler")
            low.add_request_handler(binding.method, binding.params_type, binding.served_handler())
        low.extensions[identifier] = extension.settings()

    def _task_handler(self, method: str) -> Callable[[ServerRequestContext[Any, Any], Any], Any]:
        """The handler of one ``tasks/*`` method: answered by the mounted server that passed the
        task on (``relays_tasks``), else from the task store."""
        answer = getattr(self.tasks, method.removeprefix("tasks/"))

        def handle(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
            routed = self._routed_task(method, ctx) if self._mounts or self.relays_tasks else None
            return routed if routed is not None else answer(ctx.params or {}, Context(ctx, self))

        return handle

    def _routed_task(self, method: str, ctx: ServerRequestContext[Any, Any]) -> Any:
        """The answer to ``tasks/*`` of the mounted server (at any depth) whose task it is; ``None``
        where none relays it."""
        for mount in self._mounts:
            if mount.child.relays_tasks or mount.child._mounts:
                routed = mount.child._routed_task(method, ctx)
                if routed is not None:
                    return routed
        return None

    # --- tools -----------------------------------------------------------------------------------
    def tool(self, name: str | None = None, title: str | None = None, description: str | None = None,
             annotations: ToolAnnotations | None = None, icons: list[Any] | None = None,
             meta: dict[str, Any] | None = None, structured_output: bool | None = None,
             required_scopes: list[str] | None = None, task: TaskSupport = False,
             tags: Iterable[str] | None = None, timeout: float | None = None) -> Callable[[F], F]:
        """Register a plain function as a tool: ``@mcp.tool()``.

        ``timeout=5``: a call still running after 5 seconds is answered with a ``-32001`` error naming
        the tool; a worker thread cannot be interrupted, so the body runs on with ``ctx.cancelled``
        set (check it between steps) and its result is dropped.

        ``tags={"admin"}``: what :meth:`enable`, :meth:`disable` and a ``component_filter`` may
        select it by.

        ``required_scopes``: OAuth scopes a caller's token must hold to call it (beyond
        ``AuthSettings.required_scopes``); over HTTP, a token without them gets 403
        ``insufficient_scope`` naming them, which is what sends a client to re-authorize.

        ``task=True`` (or ``"optional"``) runs each call as a task for clients that declare the tasks
        extension, and as an ordinary call for the others; ``task="required"`` refuses those others.
        """
        _misused("tool", name)

        def decorator(fn: F) -> F:
            self.add_tool(fn, name=name, title=title, description=description, annotations=annotations,
                          icons=icons, meta=meta, structured_output=structured_output,
                          required_scopes=required_scopes, task=task, tags=tags, timeout=timeout)
            return fn

        return decorator

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, title: str | None = None,
                 description: str | None = None, annotations: ToolAnnotations | None = None,
                 icons: list[Any] | None = None, meta: dict[str, Any] | None = None,
                 structured_output: bool | None = None, required_scopes: list[str] | None = None,
                 task: TaskSupport = False, tags: Iterable[str] | None = None,
                 timeout: float | None = None) -> None:
        tool = Tool(fn, name=name, title=title, description=description, annotations=annotations, icons=icons,
                    meta=meta, structured_output=structured_output, resolver_keys=self._resolver_keys,
                    required_scopes=required_scopes, task=task, tags=tags, timeout=timeout)
        if self._register(self._tools, tool.name, tool, self.settings.warn_on_duplicate_tools, "Tool"):
            self._sync_extensions()
            self._registry_changed("tool")

    def _register(self, registry: dict[str, Any], key: str, item: Any, warn: bool, kind: str) -> bool:
        """Add ``item`` under ``key`` unless the name is taken (the first registration wins, with a
        warning when ``warn``); whether it was added."""
        with self._registry_lock:
            if key in registry:
                if warn:
                    logger.warning("%s already exists: %s", kind, key)
                return False
            registry[key] = item
        return True

    def remove_tool(self, name: str) -> None:
        with self._registry_lock:
            if self._tools.pop(name, None) is None:
                raise ToolError(f"Unknown tool: {name}")
        self._sync_extensions()
        self._registry_changed("tool")

    def get_tool(self, name: Any) -> Tool | None:
        """The tool ``name`` names, a mounted server's included (a ``MountedTool``); ``None`` if none."""
        if not isinstance(name, str):
            return None
        tool = self._tools.get(name)
        if tool is None and self._mounts:
            for mount in self._mounts:
                tool = mount.tool(name)
                if tool is not None:
                    break
        return tool

    def plan(self, method: str, params: Any) -> Plan:
        """What a request is (the core's ``Planner`` port, asked once per request), from the
        registries as they are when it arrives: a ``tools/call`` finds its tool here, once, and the
        plan carries it down with what the layers below need of it (its timeout, whether it can
        send anything, its scopes, its input schema), so that neither the HTTP edge nor the
        dispatcher nor ``_call_tool`` looks it up again."""
        name = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
        if not isinstance(name, str):
            return Plan(method, private_listing=listing(method) and (
                bool(self.listings_vary_by_user) or self.component_filter is not None
                or (bool(self._mounts) and self._filtered())))
        tool = self.get_tool(name)
        # Only the Context can send (the tool's own, its resolvers', a task's, the component filter's).
        silent = self.component_filter is None and (tool is None or not tool.can_send)
        if tool is None:
            return Plan(method, name, silent=silent)
        return Plan(method, name, tool, timeout=tool.timeout, silent=silent, required_scopes=tuple(tool.required_scopes),
                    header_schema=tool.parameters if tool.header_routed else None)

    def tool_scopes(self) -> list[str]:
        """Every scope some tool requires, for the protected-resource metadata's ``scopes_supported``."""
        with self._registry_lock:
            tools = list(self._tools.values())
        if self._mounts:
            tools += self._mounted("tool")
        return list(dict.fromkeys(scope for tool in tools for scope in tool.required_scopes))

    def list_tools(self) -> list[ToolDefinition]:
        """The enabled tools, the mounted servers' after this one's own (a request's listing also
        passes the ``component_filter``)."""
        with self._registry_lock:
            tools = list(self._tools.values())
        if self._mounts:
            tools += self._mounted("tool")
        return [tool.definition() for tool in tools if self.visibility.enabled("tool", tool)]

    def call_tool(self, name: str, arguments: dict[str, Any] | None,
                  context: Context | None = None) -> CallToolResult | InputRequiredResult | CreateTaskResult:
        """Run a tool in-process. Raises ``ToolError`` (unknown tool, invalid arguments, a failure the
        tool reports) or ``UnexpectedToolError`` (a crash, the original as ``__cause__``)."""
        return self._run_tool(name, arguments, lambda: context, wire=False)

    def _run_tool(self, name: str, arguments: dict[str, Any] | None, make_context: Callable[[], Context | None],
                  wire: bool, tool: Tool | None = None) -> Any:
        """``call_tool``'s work. ``make_context``: the call's ``Context``, made once the tool is
        found and checked (before, where a ``component_filter`` needs it for the check), so that the
        tool gets it as the last thing made for it. ``wire``: for the dispatcher, which only sends
        what it returns, a tool's plain return value may come as the result's wire form
        (``Tool.invoke``); asked only where nothing between the dispatcher and the tool expects a
        model: no subclass's ``call_tool``, no extension that intercepts tool calls
        (``_answers_in_wire_form``). ``tool``: the one the request's plan found by ``name``, else it
        is looked up."""
        filtered = self.component_filter is not None
        context = make_context() if filtered else None
        tool = self._tool_to_call(name, context, tool)
        if not filtered:
            context = make_context()
        if tool.task is not None and context is not None:
            return self.tasks.call(tool, arguments, context)
        if context is None and tool.needs_context:
            context = self._detached_context()
        return tool.run(arguments, context, wire)

    def _tool_to_call(self, name: str, context: Context | None, tool: Tool | None = None) -> Tool:
        """The tool ``name`` names (``tool``, when already found), if this caller may call it now;
        else the ``ToolError`` to answer."""
        tool = tool or self.get_tool(name)
        why = None if tool is None else self._usable("tool", tool, context)
        if tool is None or why == "hidden":
            raise ToolError(f"Unknown tool: {name}")
        if why == "disabled":
            raise ToolError(f"Tool '{name}' is disabled")
        return tool

    def _detached_context(self) -> Context:
        connection = MODERN.connection(self._lowlevel_server)
        outbox = _Discard()
        rc = ServerRequestContext(session=ServerSession(connection, outbox, "direct"),
                                  lifespan_context=self.lifespan_context(), protocol_version=connection.protocol_version,
                                  method="tools/call", request_id="direct", server=self._lowlevel_server,
                                  outbox=outbox, era=connection.era)
        return Context(rc, self, NoQuestions())

    # --- resources -------------------------------------------------------------------------------
    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, icons: list[Any] | None = None,
                 annotations: Any = None, meta: dict[str, Any] | None = None,
                 security: ResourceSecurity | None = None, tags: Iterable[str] | None = None) -> Callable[[F], F]:
        """Register a function as a resource (static URI) or a template (``{placeholders}``, RFC 6570).

        ``security`` overrides the server's ``resource_security`` for this template's arguments.
        """
        _misused("resource", uri)

        def decorator(fn: F) -> F:
            fn_name = name or fn.__name__
            require_sync(fn, fn_name)
            details = dict(title=title, description=description or fn.__doc__ or "", mime_type=mime_type,
                           icons=icons, annotations=annotations, meta=meta, tags=tags)
            params = read_signature(fn, fn_name)
            if is_template(uri):
                template = ResourceTemplate(uri, fn, name=fn_name, security=security or self.resource_security,
                                            **details)
                with self._registry_lock:
                    added = self._templates.setdefault(uri, template) is template
                if added:
                    self._registry_changed("resource")
                return fn
            if params.arguments:
                raise ValueError(f"Resource {uri} has no URI parameters, but its function takes "
                                 f"{sorted(params.arguments)}; add {{placeholders}} or drop the parameters")
            if params.context:
                raise ValueError(f"Static resource {uri} cannot take a Context; only templates receive one")
            self.add_resource(FunctionResource(uri, fn, name=fn_name, **details))
            return fn

        return decorator

    def add_resource(self, resource: Resource) -> None:
        if self._register(self._resources, resource.uri, resource, self.settings.warn_on_duplicate_resources,
                          "Resource"):
            self._registry_changed("resource")

    def remove_resource(self, uri: str) -> None:
        """Unregister a static resource, or a template by the URI template it was registered with.

        The official SDK 2.3.0 has no public way to do this (its stickynotes story reaches into a
        private registry), so this completes ``remove_tool``/``remove_prompt`` here. Tell clients
        with ``ctx.session.send_resource_list_changed()``. Raises ``ResourceNotFoundError`` when
        nothing is registered under ``uri``.
        """
        uri = str(uri)
        with self._registry_lock:
            if self._resources.pop(uri, None) is None and self._templates.pop(uri, None) is None:
                raise ResourceNotFoundError(f"Unknown resource: {uri}")
        self._registry_changed("resource")

    # Two private paths of the official MCPServer that its own examples reach into, mirrored so they
    # port unchanged; each holds only the live registry (one dict operation is atomic under the GIL).
    @property
    def _resource_manager(self) -> SimpleNamespace:
        """``mcp._resource_manager._resources.pop(uri, None)`` (the stickynotes story); new code
        calls :meth:`remove_resource`."""
        return SimpleNamespace(_resources=self._resources)

    @property
    def _tool_manager(self) -> SimpleNamespace:
        """``mcp._tool_manager._tools[name].parameters = schema`` (the everything-server replacing a
        tool's advertised input schema)."""
        return SimpleNamespace(_tools=self._tools)

    def list_resources(self) -> list[ResourceDefinition]:
        """The enabled resources (an app's ``ui://`` resource while one of its tools is; a
        request's listing also passes the ``component_filter``)."""
        with self._registry_lock:
            resources: list[Any] = list(self._resources.values())
        if self._mounts:
            resources += self._mounted("resource")
        return [r.definition() for r in resources if self._usable("resource", r, None) is None]

    def list_resource_templates(self) -> list[TemplateDefinition]:
        with self._registry_lock:
            templates: list[Any] = list(self._templates.values())
        if self._mounts:
            templates += self._mounted("template")
        return [t.definition() for t in templates if self.visibility.enabled("resource", t)]

    def read_resource(self, uri: str, context: Context | None = None) -> Iterable[ReadResourceContents]:
        """Read ``uri`` in-process, as content (what ``ctx.read_resource`` returns).

        Raises ``ResourceNotFoundError``, ``ResourceError`` (raised on purpose by the resource) or
        ``UnexpectedResourceError`` (a crash, the original as ``__cause__``); ``RuntimeError`` when
        the resource asks for input, which only a client can give.
        """
        result = self.read_resource_result(uri, context)
        if isinstance(result, InputRequiredResult):
            raise RuntimeError(f"Resource {uri} returned InputRequiredResult; read_resource() only returns content: "
                               "use MCPServer.read_resource_result(uri, context) to receive and forward it")
        return [ReadResourceContents(c.blob if isinstance(c, BlobResourceContents) else c.text, c.mime_type)
                for c in result.contents]

    def read_resource_result(self, uri: str, context: Context | None = None) -> ReadResourceResult | InputRequiredResult:
        """Read ``uri``: a static resource, else the first template that matches; raises as
        :meth:`read_resource` does."""
        uri = str(uri)
        ctx = context or self._detached_context()
        resource = self._resources.get(uri)
        why = None if resource is None else self._usable("resource", resource, context)
        if why == "disabled":
            raise ResourceNotFoundError(f"Resource {uri} is disabled")
        if why == "hidden":
            resource = None
        try:
            if resource is not None:
                return ReadResourceResult(contents=to_contents(uri, resource.read(), resource.mime_type, resource.meta))
            for template in list(self._templates.values()):
                try:
                    values = template.match(uri)
                except ResourceSecurityError as refused:  # no later, laxer template gets a try
                    logger.info("%s", refused)
                    break
                if values is not None:
                    why = self._usable("resource", template, context)
                    if why == "disabled":
                        raise ResourceNotFoundError(f"Resource {uri} is disabled")
                    if why == "hidden":
                        continue
                    value = template.read(values, ctx)
                    if isinstance(value, InputRequiredResult):
                        return value
                    return ReadResourceResult(contents=to_contents(uri, value, template.mime_type, template.meta))
        except (MCPError, ResourceError):
            raise
        except Exception as crash:
            text = f"Error reading resource {uri}" if resource is not None else \
                f"Error creating resource from template {uri}"
            raise UnexpectedResourceError(text) from crash
        if self._mounts:
            return self._read_mounted(uri, context)
        raise ResourceNotFoundError(f"Unknown resource: {uri}")

    def _read_mounted(self, uri: str, context: Context | None) -> ReadResourceResult | InputRequiredResult:
        """Read ``uri`` from the first mount that serves it, this server's rules applied to the
        resource or template it names there."""
        for mount in self._mounts:
            inner = mount.names.inner_uri(uri)
            if inner is None:
                continue
            component = mount.component("resource", uri) or mount.template_for(inner)
            why = None if component is None else self._usable("resource", component, context)
            if why == "disabled":
                raise ResourceNotFoundError(f"Resource {uri} is disabled")
            if why == "hidden":
                continue
            try:
                return mount.read_resource(inner, context)
            except ResourceNotFoundError:
                if component is not None:
                    raise
        raise ResourceNotFoundError(f"Unknown resource: {uri}")

    # --- prompts ---------------------------------------------------------------------------------
    def prompt(self, name: str | None = None, title: str | None = None, description: str | None = None,
               icons: list[Any] | None = None, tags: Iterable[str] | None = None) -> Callable[[F], F]:
        """Register a function as a prompt: ``@mcp.prompt()``."""
        _misused("prompt", name)

        def decorator(fn: F) -> F:
            self.add_prompt(Prompt.from_function(fn, name=name, title=title, description=description, icons=icons,
                                                 tags=tags))
            return fn

        return decorator

    def add_prompt(self, prompt: Prompt) -> None:
        if self._register(self._prompts, prompt.name, prompt, self.settings.warn_on_duplicate_prompts, "Prompt"):
            self._registry_changed("prompt")

    def remove_prompt(self, name: str) -> None:
        with self._registry_lock:
            if self._prompts.pop(name, None) is None:
                raise ValueError(f"Unknown prompt: {name}")
        self._registry_changed("prompt")

    def list_prompts(self) -> list[PromptDefinition]:
        with self._registry_lock:
            prompts: list[Any] = list(self._prompts.values())
        if self._mounts:
            prompts += self._mounted("prompt")
        return [p.definition() for p in prompts if self.visibility.enabled("prompt", p)]

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None, context: Context | None = None) -> Any:
        prompt = self._prompts.get(name)
        if prompt is None and self._mounts:
            return self._get_mounted_prompt(name, arguments, context)
        why = None if prompt is None else self._usable("prompt", prompt, context)
        if prompt is None or why == "hidden":
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")  # the caller's mistake: -32602, as for tools/call
        if why == "disabled":
            raise MCPError(INVALID_PARAMS, f"Prompt '{name}' is disabled")
        return prompt.render(arguments, context or self._detached_context())

    def _get_mounted_prompt(self, name: str, arguments: dict[str, str] | None, context: Context | None) -> Any:
        for mount in self._mounts:
            component = mount.component("prompt", name)
            why = None if component is None else self._usable("prompt", component, context)
            if component is None or why == "hidden":
                continue
            if why == "disabled":
                raise MCPError(INVALID_PARAMS, f"Prompt '{name}' is disabled")
            return mount.get_prompt(component.inner.name, arguments, context)
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")

    # --- completion ------------------------------------------------------------------------------
    def completion(self) -> Callable[[F], F]:
        """Register the one completion handler: ``def handler(ref, argument, context) -> Completion | None``."""

        def decorator(fn: F) -> F:
            require_sync(fn, getattr(fn, "__name__", "completion"))
            self._completion = fn
            self._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, self._complete)
            for parent in list(self._mounted_in):
                parent._serve_completions()
            return fn

        return decorator

    def _serve_completions(self) -> None:
        """Answer ``completion/complete`` (and advertise it): this server has a handler, or a
        server mounted in it has; the servers this one is mounted in then answer it too."""
        low = self._lowlevel_server
        if low.get_request_handler("completion/complete") is None:
            low.add_request_handler("completion/complete", CompleteRequestParams, self._complete)
        for parent in list(self._mounted_in):
            parent._serve_completions()

    def complete(self, ref: Any, argument: Any, context: Any, ctx: Context | None = None) -> CompleteResult:
        """Complete an argument of a prompt or template: a mounted one's by its server's handler."""
        if self._mounts:
            for mount in self._mounts:
                inner = mount.completion_ref(ref)
                if inner is not None:
                    return mount.complete(inner, argument, context, ctx)
        if self._completion is None:
            raise MCPError(-32601, "Method not found: completion/complete")
        completion = self._completion(ref, argument, context)
        return CompleteResult(completion=completion or Completion(values=[]))

    # --- custom routes ---------------------------------------------------------------------------
    def custom_route(self, path: str, methods: list[str], name: str | None = None, include_in_schema: bool = True,
                     *, dns_rebinding_protection: bool = True) -> Callable[[F], F]:
        """Serve a plain ``def handler(request) -> werkzeug.Response`` beside the MCP endpoint.

        Routes are keyed by path and method, so several handlers may share a path (GET reads, POST
        writes); a GET route answers HEAD too, and another method gets 405 with ``Allow``.
        ``include_in_schema`` is taken as the official signature has it; Starlette's OpenAPI
        schema has no WSGI counterpart, so it changes nothing here.

        The route checks ``Host`` and ``Origin`` as the MCP endpoint does (``transport_security``),
        so a hostile page cannot reach it through DNS rebinding; ``dns_rebinding_protection=False``
        serves it to any host name and origin (a public page behind a proxy that sets ``Host``).
        """

        def decorator(fn: F) -> F:
            require_sync(fn, name or fn.__name__)
            self.custom_routes.append((path, [m.upper() for m in methods], fn, dns_rebinding_protection))
            return fn

        return decorator

    # --- serving ---------------------------------------------------------------------------------
    def wsgi_app(self, **options: Unpack[WSGIAppKeywords]) -> MCPWSGIApp:
        """The Streamable HTTP endpoint as a WSGI application, for any WSGI server or host framework.

        ``debug`` defaults to ``MCPServer(debug=...)``, as the official app takes it from there."""
        options.setdefault("debug", self.settings.debug)
        return self._lowlevel_server.wsgi_app(**options)

    streamable_http_app = wsgi_app

    def in_memory_endpoint(self, raise_exceptions: bool = False) -> InMemoryEndpoint:
        """One connection without sockets, as ``Client(mcp)`` uses it; ``raise_exceptions`` lets
        failures outside tool bodies carry their real message instead of the sanitized one."""
        return self._lowlevel_server.in_memory_endpoint(raise_exceptions)

    @classmethod
    def from_openapi(cls, spec: Any, **options: Any) -> MCPServer[Any]:
        """A server with one tool per operation of an OpenAPI 3 ``spec`` (a dict, or the path or URL
        of a JSON document), each call a request to ``base_url=`` through ``session=`` (or with
        ``auth=``); ``tags=``, ``operation_ids=`` and ``methods=`` choose the operations. See
        ``minimcp.server.app.openapi``."""
        from minimcp.server.app.openapi import from_openapi

        return from_openapi(cls, spec, **options)

    @classmethod
    def as_proxy(cls, target: Any, **options: Any) -> MCPServer[Any]:
        """A server serving ``target``: a URL, a command, an ``MCPServer`` or an ``mcpServers``
        configuration of several (each under its name); see ``minimcp.server.app.proxy.create_proxy``."""
        from minimcp.server.app.proxy import create_proxy

        return create_proxy(target, **options)

    def run(self, transport: Literal["stdio", "streamable-http"] = "stdio", **options: Any) -> None:
        """Serve until interrupted: stdio by default, or Streamable HTTP on ``http://HOST:PORT/mcp``."""
        if transport not in ("stdio", "streamable-http"):
            raise ValueError(f"Unknown transport: {transport}")
        # run() owns the process, so its log lines (a tool's crash, where it listens) need somewhere to
        # go: stderr at ``log_level``. basicConfig does nothing when the root logger already has a
        # handler, so an application that set up its logging keeps it.
        logging.basicConfig(level=self.settings.log_level)
        if transport == "streamable-http":
            options.setdefault("debug", self.settings.debug)
        self._lowlevel_server.run(transport=transport, **options)


def _served_key(kind: ComponentKind, component: Any) -> str:
    """What a component is served under: a resource's URI, a template's URI template, else its name."""
    return component.uri if kind == "resource" else component.uri_template if kind == "template" else component.name


_CHANGES: dict[Kind, ServerEvent] = {
    "tool": ToolsListChanged(), "resource": ResourcesListChanged(), "prompt": PromptsListChanged()}


def _ui_uri(meta: dict[str, Any] | None) -> Any:
    """The ``ui://`` resource a tool's ``_meta`` names as its UI (MCP Apps), if any."""
    ui = meta.get("ui") if meta else None
    return ui.get("resourceUri") if isinstance(ui, dict) else None


def _unsubscribe(ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> dict[str, Any]:
    ctx.session.connection.subscriptions.discard(str(params.uri))
    return {}


def _set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> dict[str, Any]:
    ctx.session.connection.log_level = params.level
    return {}


def require_client_extension(ctx: ServerRequestContext[Any, Any] | Context, identifier: str) -> None:
    """Refuse the request (-32021, naming what to declare) unless the client declared ``identifier``;
    call it first in a handler or interceptor whose behaviour only a client of the extension expects."""
    session = ctx.session
    if not declares_extension(session.client_capabilities, identifier):
        raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, f"Client did not declare required extension {identifier!r}",
                       extension_required_data(identifier))
