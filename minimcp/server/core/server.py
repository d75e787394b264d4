"""``Server``: the low-level tier, a handler per method, as the official ``mcp.server.lowlevel``.

A handler is a plain ``def handler(ctx, params) -> result``: ``ctx`` a ``ServerRequestContext``,
``params`` the method's params model already validated, the result a result model (or a dict, or
``None`` for an empty result). The capabilities follow from the handlers given. Everything else,
which era a message belongs to, sessions, workers, the wire, is the core's (``dispatch``), and the
same core serves ``MCPServer``, which registers its decorated functions here as handlers.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import functools
import inspect
import logging
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, Union

from pydantic import BaseModel
from typing_extensions import TypeVar, Unpack

from minimcp.server.core.caching import CacheableMethod, CacheHint, validate_cache_hints
from minimcp.server.core.context import ServerMiddleware
from minimcp.server.core.dispatch import Dispatcher
from minimcp.server.core.era import era_of_version
from minimcp.server.core.hooks import Handler, HandlerEntry, ServerHooks
from minimcp.server.core.initialization import InitializationOptions, NotificationOptions
from minimcp.server.core.shares import Shares, fair_share
from minimcp.server.core.listens import ListenSource
from minimcp.server.core.plan import HookPlanner
from minimcp.server.core.ports import Planner
from minimcp.server.core.options import LimitKeywords, Limits, gather, keyword_names, refuse_unknown
from minimcp.server.core.workers import Deadlines, Lock, WorkerPool
from minimcp.server.core.in_process import MemoryBackend
from minimcp.server.core.otel import default_middleware
from minimcp.server.core.ports import Stores
from minimcp.shared import call_workers
from minimcp.shared.exceptions import MCPDeprecationWarning
from minimcp.types import (
    CompletionsCapability,
    Icon,
    Implementation,
    LoggingCapability,
    PromptsCapability,
    ResourcesCapability,
    ServerCapabilities,
    ToolsCapability,
    dump,
)
from minimcp.types.methods import METHODS, NOTIFICATIONS

if TYPE_CHECKING:
    from minimcp.server.edges.memory import InMemoryEndpoint
    from minimcp.server.edges.wsgi import MCPWSGIApp, WSGIAppKeywords

logger = logging.getLogger("minimcp.server")
LifespanResultT = TypeVar("LifespanResultT", default=Any)
#: What ``backend=`` takes: the stores themselves, their URL, or ``None`` for this process's memory.
BackendSpec = Union[Stores, str, None]


def resolve_backend(spec: BackendSpec, server_name: str) -> Stores:
    """The stores ``backend=`` names, named for the server ``server_name``: the core's own
    ``MemoryBackend`` for ``None``, an object as it is, and a URL as ``minimcp.server.backends``
    reads it (a Redis one needs redis-py, an optional dependency, so that package is imported
    only for a URL)."""
    if isinstance(spec, str):
        from minimcp.server.backends import resolve_backend as from_url

        return from_url(spec, server_name)
    if spec is None:
        backend: Stores = MemoryBackend()
    elif isinstance(spec, Stores):
        backend = spec
    else:
        raise TypeError(f"backend= takes a URL or a minimcp.server.backends.Backend, not {type(spec).__name__}")
    backend.named_for(server_name)
    return backend


class ServerKeywords(LimitKeywords, total=False):
    """The keywords of ``Server`` beyond the official ones: ``Limits``' fields, and where the
    server keeps its state, the layers around every message, and the methods it serves unadvertised."""

    #: Where what outlives a request is kept (``minimcp.server.backends``; default: this process's
    #: memory); a shared one (``backend="redis://..."``) lets any process serve any request.
    backend: BackendSpec
    #: ``(ctx, call_next) -> result`` layers around every message received, after the default ones.
    middleware: Iterable[ServerMiddleware[Any]]
    #: Methods served without being advertised in the capabilities.
    unadvertised: Iterable[str]


#: Where a keyword ``Server`` and ``MCPServer`` refuse may belong instead.
HTTP_OPTIONS_ELSEWHERE = ("an HTTP endpoint's options (json_response=, max_sessions=, ...) go to wsgi_app(...) "
                          "or run(transport='streamable-http', ...)")


@contextlib.contextmanager
def _no_lifespan(server: Any) -> Iterator[dict[str, Any]]:
    yield {}


def _synchronous(cm: Any) -> AbstractContextManager[Any]:
    """The lifespan's context manager, also when a port kept ``@asynccontextmanager`` on a function
    it made synchronous: the decorator then holds a plain generator, run as ``@contextmanager``
    would run it."""
    generator = getattr(cm, "gen", None)
    if not hasattr(cm, "__enter__") and inspect.isgenerator(generator):
        return contextlib.contextmanager(lambda: generator)()
    return cm


def require_sync_lifespan(lifespan: Any) -> None:
    """Refuse an async lifespan at construction, with the porting hint."""
    if lifespan is not None and (inspect.isasyncgenfunction(getattr(lifespan, "__wrapped__", None))
                                 or inspect.iscoroutinefunction(lifespan)):
        raise TypeError("lifespan must be a synchronous context manager factory; use contextlib.contextmanager")


def require_sync_handler(method: str, handler: Any) -> None:
    """Refuse a coroutine handler at registration, never at call time."""
    target = getattr(handler, "__call__", None) if not inspect.isfunction(handler) else handler
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(target):
        name = getattr(handler, "__name__", type(handler).__name__)
        raise TypeError(f"minimcp runs plain functions only: the {method} handler {name!r} is declared 'async def'; "
                        "delete async/await when porting")


class Server(Generic[LifespanResultT]):
    """A low-level MCP server: one handler per method, served over stdio, Streamable HTTP or in memory."""

    def __init__(
        self,
        name: str,
        *,
        version: str = "",
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[Icon] | None = None,
        cache_hints: Mapping[CacheableMethod, CacheHint] | None = None,
        lifespan: Callable[[Server[LifespanResultT]], AbstractContextManager[LifespanResultT]] | None = None,
        get_tool_input_schema: Callable[[str], Mapping[str, Any] | None] | None = None,
        on_list_tools: Handler | None = None,
        on_call_tool: Handler | None = None,
        on_list_resources: Handler | None = None,
        on_list_resource_templates: Handler | None = None,
        on_read_resource: Handler | None = None,
        on_subscribe_resource: Handler | None = None,
        on_unsubscribe_resource: Handler | None = None,
        on_subscriptions_listen: Handler | None = None,
        on_list_prompts: Handler | None = None,
        on_get_prompt: Handler | None = None,
        on_completion: Handler | None = None,
        on_set_logging_level: Handler | None = None,
        on_ping: Handler | None = None,
        on_roots_list_changed: Handler | None = None,
        on_progress: Handler | None = None,
        limits: Limits | None = None,
        hooks: ServerHooks | None = None,
        **options: Unpack[ServerKeywords],
    ) -> None:
        keywords: dict[str, Any] = dict(options)
        #: The bounds of this server's workers and of each caller's share of them (``Limits``).
        self.limits = limits = gather("Server", "limits", limits, Limits, keywords)
        backend: BackendSpec = keywords.pop("backend", None)
        middleware: Iterable[ServerMiddleware[Any]] = keywords.pop("middleware", ())
        unadvertised: Iterable[str] = keywords.pop("unadvertised", ())
        refuse_unknown("Server", keywords, keyword_names(ServerKeywords) | {"limits", "hooks"}, HTTP_OPTIONS_ELSEWHERE)
        require_sync_lifespan(lifespan)
        for deprecated, what in ((on_set_logging_level, "The logging capability is deprecated as of 2026-07-28"),
                                 (on_roots_list_changed, "The roots capability is deprecated as of 2026-07-28"),
                                 (on_progress, "Client-to-server progress is deprecated as of 2026-07-28")):
            if deprecated is not None:
                warnings.warn(f"{what}.", MCPDeprecationWarning, stacklevel=2)
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.instructions = instructions
        self.website_url = website_url
        self.icons = icons
        self.lifespan = lifespan or _no_lifespan
        #: What the server built on this one answers the core and the edge with, fixed here.
        self.hooks = hooks or ServerHooks()
        if get_tool_input_schema is not None:
            self.hooks = replace(self.hooks, get_tool_input_schema=get_tool_input_schema)
        hooks = self.hooks
        #: Asked once per request, by the edge or the dispatcher; its ``Plan`` is handed down.
        self.planner: Planner = hooks.planner or HookPlanner(
            hooks.get_tool_input_schema, hooks.get_tool_required_scopes, hooks.get_tool_timeout,
            hooks.get_tool_silent, hooks.listings_vary)
        self.pool = WorkerPool(limits.max_workers, limits.worker_wait_timeout)
        call_workers.declare(self, limits.max_workers)  # an HTTP server sizes its threads by them
        self.back_channel_timeout = limits.back_channel_timeout
        #: Where what outlives a request is kept (``minimcp.server.backends``): this process's memory
        #: by default; a shared one (``backend="redis://..."``) lets any process serve any request.
        self.backend = resolve_backend(backend, name)
        #: The calls one principal may have running at once (``Limits.max_calls_per_principal``); the
        #: next one is refused at once instead of waiting for a worker.
        calls = fair_share(limits.max_workers, 4) if limits.max_calls_per_principal is None \
            else limits.max_calls_per_principal
        self.call_shares = Shares(calls, "Too many calls running for this caller (limit {limit} at once); "
                                         "wait for one to finish")
        #: The legacy questions (elicitation, sampling, roots) one principal may leave unanswered at
        #: once (``Limits.max_questions_per_principal``).
        questions = fair_share(calls, 2) if limits.max_questions_per_principal is None \
            else limits.max_questions_per_principal
        self.question_shares = Shares(questions, "Too many questions awaiting this caller's answers (limit {limit}); "
                                                 "answer one first")
        #: Per-method ``ttlMs``/``cacheScope`` for 2026-07-28 results whose handler left them unset;
        #: without one, the results' own defaults (immediately stale, private), as officially.
        self.cache_hints = validate_cache_hints(cache_hints)
        #: Methods served without being advertised in the capabilities (``MCPServer`` answers legacy
        #: ``logging/setLevel`` and ``resources/subscribe`` but, as the official one, claims neither).
        self.unadvertised: set[str] = set(unadvertised)
        #: What a legacy ``initialize`` announces; ``run(...)`` with explicit options replaces it.
        self.notification_options = NotificationOptions()
        self._initialization_options: InitializationOptions | None = None
        #: The one thread that answers calls whose timeout passed.
        self.deadlines = Deadlines()
        #: Routes served beside the MCP endpoint: (path, methods, ``def handler(request) -> Response``).
        #: ``(path, methods, handler, dns_rebinding_protection)`` of each route.
        self.custom_routes: list[tuple[str, list[str], Callable[..., Any], bool]] = []
        #: Extensions advertised under ``capabilities.extensions`` (identifier -> settings).
        self.extensions: dict[str, dict[str, Any]] = {}
        #: ``(ctx, call_next) -> result`` layers around every message received, outermost first
        #: (``minimcp.server.core.context.ServerMiddleware``; ``RequestStateBoundary`` is one). It starts
        #: with ``OpenTelemetryMiddleware`` where OpenTelemetry is installed, as the official list does,
        #: then the ``middleware=`` given.
        self.middleware: list[ServerMiddleware[Any]] = [*default_middleware(), *middleware]
        self._request_handlers: dict[str, HandlerEntry] = {}
        self._notification_handlers: dict[str, HandlerEntry] = {}
        # _lifespan_lock guards _lifespan_cm and _lifespan_value: the lifespan is entered once.
        self._lifespan_lock = Lock()
        self._lifespan_cm: AbstractContextManager[Any] | None = None
        self._lifespan_value: Any = {}
        self.dispatcher = Dispatcher(self, limits.max_listens_per_principal)
        requests: list[tuple[str, Handler | None]] = [
            ("ping", on_ping), ("tools/list", on_list_tools), ("tools/call", on_call_tool),
            ("resources/list", on_list_resources), ("resources/templates/list", on_list_resource_templates),
            ("resources/read", on_read_resource), ("resources/subscribe", on_subscribe_resource),
            ("resources/unsubscribe", on_unsubscribe_resource), ("subscriptions/listen", on_subscriptions_listen),
            ("prompts/list", on_list_prompts), ("prompts/get", on_get_prompt), ("completion/complete", on_completion),
            ("logging/setLevel", on_set_logging_level),
        ]
        for method, handler in requests:
            if handler is not None:  # its params validated against the method table's model
                self.add_request_handler(method, METHODS[method].params, handler)
        notifications: list[tuple[str, Handler | None]] = [
            ("notifications/roots/list_changed", on_roots_list_changed), ("notifications/progress", on_progress),
        ]
        for method, handler in notifications:
            if handler is not None:
                self.add_notification_handler(method, NOTIFICATIONS[method].params, handler)

    # --- handlers --------------------------------------------------------------------------------
    def add_request_handler(self, method: str, params_type: type[BaseModel], handler: Handler, *,
                            read: Callable[[dict[str, Any]], Any] | None = None) -> None:
        """Serve ``method`` with ``handler(ctx, params)``, params validated against ``params_type`` first
        (or given by ``read``, a cheaper reader: ``HandlerEntry.read``)."""
        if method == "initialize":
            raise ValueError("'initialize' is answered by the server core and cannot be overridden")
        require_sync_handler(method, handler)
        if isinstance(handler, ListenSource):
            handler.bind(self.dispatcher.listens)  # its resource updates reach legacy subscribers before any listen opens
        self._request_handlers[method] = HandlerEntry(params_type, handler, read)

    def add_notification_handler(self, method: str, params_type: type[BaseModel], handler: Handler) -> None:
        """Run ``handler(ctx, params)`` when the client sends the notification ``method``."""
        require_sync_handler(method, handler)
        self._notification_handlers[method] = HandlerEntry(params_type, handler)

    def get_request_handler(self, method: str) -> HandlerEntry | None:
        return self._request_handlers.get(method)

    def get_notification_handler(self, method: str) -> HandlerEntry | None:
        return self._notification_handlers.get(method)

    # --- identity and capabilities ---------------------------------------------------------------
    @property
    def server_info(self) -> Implementation:
        return Implementation(name=self.name, version=self.version, title=self.title, description=self.description,
                              website_url=self.website_url, icons=self.icons)

    @functools.cached_property
    def server_info_wire(self) -> dict[str, Any]:
        """``server_info`` in wire form, computed once: the identity is fixed at construction (two
        threads computing it at once compute the same dict)."""
        return dump(self.server_info)

    @property
    def server_info_stamp(self) -> dict[str, Any]:
        """The official name: ``server_info`` in wire form, a copy the caller owns (the cached one
        is stamped into every answer, so it is never handed out)."""
        return copy.deepcopy(self.server_info_wire)

    def get_capabilities(self, notification_options: NotificationOptions | None = None,
                         experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                         extensions: dict[str, dict[str, Any]] | None = None, *,
                         protocol_version: str | None = None) -> ServerCapabilities:
        """The capabilities the registered handlers imply.

        On 2026-07-28 change notifications travel only on ``subscriptions/listen`` streams, so the
        ``listChanged`` and ``subscribe`` flags say whether that method is served; on a legacy
        connection they come from ``notification_options`` and the ``resources/subscribe`` handler.
        ``extensions`` (default: ``self.extensions``) is advertised on 2026-07-28 only.
        """
        handlers = self._request_handlers.keys() - self.unadvertised
        served = {METHODS[method].capability for method in handlers if method in METHODS}
        era = era_of_version(protocol_version)
        tools_changed, prompts_changed, resources_changed, subscribe = era.change_notifications(
            handlers, notification_options or self.notification_options)
        if extensions is None:
            extensions = dict(self.extensions) or None
        return ServerCapabilities(
            tools=ToolsCapability(list_changed=tools_changed) if "tools" in served else None,
            resources=ResourcesCapability(subscribe=subscribe, list_changed=resources_changed)
            if "resources" in served else None,
            prompts=PromptsCapability(list_changed=prompts_changed) if "prompts" in served else None,
            logging=LoggingCapability() if "logging" in served else None,
            completions=CompletionsCapability() if "completions" in served else None,
            experimental=experimental_capabilities,
            extensions=extensions if era.advertises_extensions else None,
        )

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                                      extensions: dict[str, dict[str, Any]] | None = None) -> InitializationOptions:
        return InitializationOptions(
            server_name=self.name, server_version=self.version, title=self.title, description=self.description,
            capabilities=self.get_capabilities(notification_options, experimental_capabilities, extensions),
            instructions=self.instructions, website_url=self.website_url, icons=self.icons,
        )

    @property
    def initialization_options(self) -> InitializationOptions:
        """What ``initialize`` answers: the options ``run`` was given, else derived now."""
        return self._initialization_options or self.create_initialization_options()

    @initialization_options.setter
    def initialization_options(self, options: InitializationOptions) -> None:
        self._initialization_options = options

    # --- lifespan --------------------------------------------------------------------------------
    def lifespan_context(self) -> Any:
        """What the lifespan yielded, entering it on first use in this process."""
        if self._lifespan_cm is not None:
            return self._lifespan_value
        with self._lifespan_lock:
            if self._lifespan_cm is None:
                cm = self.new_lifespan()
                self._lifespan_value = cm.__enter__()
                self._lifespan_cm = cm
                atexit.register(self.close)
        return self._lifespan_value

    def new_lifespan(self) -> AbstractContextManager[Any]:
        """A fresh, not yet entered lifespan: the process-wide one above is one, and each in-memory
        ``Client(server)`` enters one of its own, as the official SDK's ``run`` does per connection."""
        return _synchronous(self.lifespan(self))

    def close(self) -> None:
        """End open listens, exit the lifespan, stop the worker pool and release the backend's
        connections; blocked workers wake with "Connection closed"."""
        self.dispatcher.listens.close()
        with self._lifespan_lock:
            cm, self._lifespan_cm = self._lifespan_cm, None
        if cm is not None:
            cm.__exit__(None, None, None)
        self.pool.close()
        self.backend.close()

    # --- serving ---------------------------------------------------------------------------------
    # The bodies are the runner's (``minimcp.server.edges.runner``), which chooses and imports the
    # transports: each method imports it when called, since importing the core must not import a
    # transport (``tests/test_layers.py``). A registration the runner made at its import would need
    # something to import it first, and the only candidate, ``minimcp.server``, is imported with
    # every import of the core.
    def run(self, read_stream: Any = None, write_stream: Any = None,
            initialization_options: InitializationOptions | None = None, raise_exceptions: bool = False, *,
            transport: Literal["stdio", "streamable-http"] | None = None, **options: Any) -> None:
        """Serve until the client leaves or Ctrl-C.

        ``run(read_stream, write_stream, options)`` serves one connection on the streams
        ``minimcp.server.edges.stdio.stdio_server()`` yields, as the official SDK does;
        ``run(transport="stdio")`` or ``run(transport="streamable-http", host=..., port=...)`` picks
        the transport itself, as ``MCPServer.run`` does.
        """
        from minimcp.server.edges.runner import run

        run(self, read_stream, write_stream, initialization_options, raise_exceptions, transport=transport, **options)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Bracket a serving loop with the lifespan."""
        self.lifespan_context()
        try:
            yield
        finally:
            self.close()

    def wsgi_app(self, **options: Unpack[WSGIAppKeywords]) -> MCPWSGIApp:
        """The Streamable HTTP endpoint as a WSGI application, for any WSGI server or host framework."""
        from minimcp.server.edges.runner import wsgi_app

        return wsgi_app(self, **options)

    streamable_http_app = wsgi_app

    def in_memory_endpoint(self, raise_exceptions: bool = False) -> InMemoryEndpoint:
        """One connection without sockets, as ``Client(server)`` uses it; ``raise_exceptions`` lets
        failures outside handler bodies carry their real message instead of the sanitized one."""
        from minimcp.server.edges.runner import in_memory_endpoint

        return in_memory_endpoint(self, raise_exceptions)
