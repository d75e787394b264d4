"""``MCPServer``: the registries, the decorators, and the entry points that serve them.

The server object holds what it serves (tools, resources, templates, prompts, one completion
handler), the settings every transport shares (one worker pool, the back-channel timeout, the
request-state keys), and the lifespan. It speaks no protocol itself: ``dispatch.Dispatcher`` does,
and the transports (``wsgi``, ``stdio``, ``memory``) feed it.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, TypeVar

from minimcp.jsonrpc import MCPError, NoBackChannelError
from minimcp.server.lowlevel.calls import Outbox, WorkerPool
from minimcp.server.mcpserver.context import Context, RequestContext
from minimcp.server.lowlevel.dispatch import Dispatcher
from minimcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from minimcp.server.mcpserver.prompts.base import Prompt
from minimcp.server.mcpserver.resolve import ResolverKeys
from minimcp.server.mcpserver.resources import (
    FunctionResource,
    ReadResourceContents,
    Resource,
    ResourceTemplate,
    is_template,
    to_contents,
)
from minimcp.server.lowlevel.rounds import RequestStateSecurity
from minimcp.server.lowlevel.sessions import ServerSession
from minimcp.server.mcpserver.signature import classify, require_sync
from minimcp.server.mcpserver.tools import TaskSupport, Tool, error_result
from minimcp.server.tasks import TaskManager, TaskStore
from minimcp.shared.tasks import TASKS_EXTENSION, CreateTaskResult
from minimcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    BlobResourceContents,
    CallToolResult,
    CompleteResult,
    Completion,
    CompletionsCapability,
    Implementation,
    InputRequiredResult,
    LoggingCapability,
    PromptsCapability,
    ReadResourceResult,
    ResourcesCapability,
    ServerCapabilities,
    ToolAnnotations,
    ToolsCapability,
    dump,
)
from minimcp.types import Prompt as PromptDefinition
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition
from minimcp.types import Tool as ToolDefinition

if TYPE_CHECKING:
    from minimcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
    from minimcp.server.auth.settings import AuthSettings
    from minimcp.server.memory import InMemoryEndpoint
    from minimcp.server.wsgi import MCPWSGIApp

logger = logging.getLogger("minimcp.server")
LifespanT = TypeVar("LifespanT")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Settings:
    debug: bool
    log_level: str
    warn_on_duplicate_tools: bool
    warn_on_duplicate_resources: bool
    warn_on_duplicate_prompts: bool
    dependencies: list[str]
    auth: AuthSettings | None = None


def _misused(decorator: str, target: Any) -> None:
    if callable(target) and not isinstance(target, str):
        raise TypeError(f"The @{decorator} decorator was used incorrectly. Did you forget to call it? "
                        f"Use @{decorator}() instead of @{decorator}")


class _Discard(Outbox):
    """The outbox of a direct ``mcp.call_tool(...)``: there is no client to tell anything."""

    def __init__(self) -> None:
        super().__init__(can_request=False)

    def _deliver(self, message: dict[str, Any], final: bool) -> None:
        return None


class _NoQuestions:
    def ask(self, key: str, method: str, params: dict[str, Any], gate: Any) -> dict[str, Any]:
        raise NoBackChannelError(method)


class MCPServer(Generic[LifespanT]):
    """An MCP server: register tools, resources and prompts, then ``run()`` or mount ``wsgi_app()``."""

    #: Whether listings depend on who asks (a host filters tools by permission): 2026-07-28 list
    #: results then say ``cacheScope: "private"``, so no shared cache hands one user's list to another.
    listings_vary_by_user = False

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
        max_workers: int = 32,
        worker_wait_timeout: float = 30.0,
        back_channel_timeout: float = 600.0,
        elicit_replay: bool = True,
        auth: AuthSettings | None = None,
        token_verifier: TokenVerifier | None = None,
        auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
        task_store: TaskStore | None = None,
    ) -> None:
        if lifespan is not None and (inspect.isasyncgenfunction(getattr(lifespan, "__wrapped__", None))
                                     or inspect.iscoroutinefunction(lifespan)):
            raise TypeError("lifespan must be a synchronous context manager factory; use contextlib.contextmanager")
        if request_state_security is not None and request_state_security.explicit and not name \
                and request_state_security.audience is None:
            raise ValueError(
                "request_state_security is configured but this server has no name. Name the server "
                "(MCPServer('name', ...)) or pass audience= to RequestStateSecurity, so that states minted for "
                "another server are refused."
            )
        self._name = name
        self.title = title
        self.description = description
        self.instructions = instructions
        self.website_url = website_url
        self.icons = icons
        self.version = version
        if auth is not None or token_verifier is not None or auth_server_provider is not None:
            from minimcp.server.auth.resource_server import check_auth_options

            check_auth_options(auth, token_verifier, auth_server_provider)
        self.settings = Settings(debug, log_level, warn_on_duplicate_tools, warn_on_duplicate_resources,
                                 warn_on_duplicate_prompts, list(dependencies or []), auth)
        self._token_verifier = token_verifier
        self._auth_server_provider = auth_server_provider
        logging.basicConfig(level=log_level)
        self.request_state_security = request_state_security or RequestStateSecurity.ephemeral()
        self.pool = WorkerPool(max_workers, worker_wait_timeout)
        self.back_channel_timeout = back_channel_timeout
        self.elicit_replay = elicit_replay
        self.cache_ttl_ms = 60_000
        self._resolver_keys = ResolverKeys()
        # _registry_lock guards the registries below; reads take a snapshot under it.
        self._registry_lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self._completion: Callable[..., Any] | None = None
        #: ``(path, methods, handler, dns_rebinding_protection)`` of each ``@custom_route``.
        self.custom_routes: list[tuple[str, list[str], Callable[..., Any], bool]] = []
        self._lifespan = lifespan
        # _lifespan_lock guards _lifespan_cm and _lifespan_value: the lifespan is entered once.
        self._lifespan_lock = threading.Lock()
        self._lifespan_cm: AbstractContextManager[Any] | None = None
        self._lifespan_value: Any = {}
        self.dispatcher = Dispatcher(self)
        self.tasks = TaskManager(self, task_store)
        self.server_info = Implementation(name=self.name, version=version, title=title, description=description,
                                          website_url=website_url, icons=icons)
        self.server_info_wire = dump(self.server_info)
        for tool in tools or []:
            self._tools[tool.name] = tool
        for resource in resources or []:
            self.add_resource(resource)

    @property
    def name(self) -> str:
        return self._name or "mcp-server"

    # --- lifespan --------------------------------------------------------------------------------
    def lifespan_context(self) -> Any:
        """What the lifespan yielded, entering it on first use in this process."""
        if self._lifespan is None or self._lifespan_cm is not None:
            return self._lifespan_value
        with self._lifespan_lock:
            if self._lifespan_cm is None:
                cm = self._lifespan(self)
                self._lifespan_value = cm.__enter__()
                self._lifespan_cm = cm
                atexit.register(self.close)
        return self._lifespan_value

    def close(self) -> None:
        """End open listens, exit the lifespan and stop the worker pool; blocked workers wake with
        "Connection closed"."""
        self.dispatcher.listens.close()
        self.tasks.close()
        with self._lifespan_lock:
            cm, self._lifespan_cm = self._lifespan_cm, None
        if cm is not None:
            cm.__exit__(None, None, None)
        self.pool.close()

    # --- the host application (minimcp.flask, minimcp.django override these) ----------------------
    def call_scope(self) -> AbstractContextManager[Any]:
        """The context every handler of one request runs in, on its worker thread.

        Called on the thread that received the request, while the host framework's context (its
        request, its logged-in user) is still there; the context manager it returns is entered on
        the worker around the handler (tool, resolvers, resource, prompt) and exited when it ends.
        A host captures what it needs here and re-establishes it there.
        """
        return contextlib.nullcontext()

    def host_user(self) -> Any:
        """The host application's user of the current call (``ctx.user``); ``None`` outside a host."""
        return None

    # --- capabilities ----------------------------------------------------------------------------
    def capabilities(self) -> ServerCapabilities:
        return ServerCapabilities(
            tools=ToolsCapability(list_changed=True),
            resources=ResourcesCapability(subscribe=True, list_changed=True),
            prompts=PromptsCapability(list_changed=True),
            logging=LoggingCapability(),
            completions=CompletionsCapability() if self._completion is not None else None,
            extensions={TASKS_EXTENSION: {}} if self._serves_tasks() else None,
        )

    def _serves_tasks(self) -> bool:
        with self._registry_lock:
            return any(tool.task is not None for tool in self._tools.values())

    # --- tools -----------------------------------------------------------------------------------
    def tool(self, name: str | None = None, title: str | None = None, description: str | None = None,
             annotations: ToolAnnotations | None = None, icons: list[Any] | None = None,
             meta: dict[str, Any] | None = None, structured_output: bool | None = None,
             required_scopes: list[str] | None = None, task: TaskSupport = False) -> Callable[[F], F]:
        """Register a plain function as a tool: ``@mcp.tool()``.

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
                          required_scopes=required_scopes, task=task)
            return fn

        return decorator

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, title: str | None = None,
                 description: str | None = None, annotations: ToolAnnotations | None = None,
                 icons: list[Any] | None = None, meta: dict[str, Any] | None = None,
                 structured_output: bool | None = None, required_scopes: list[str] | None = None,
                 task: TaskSupport = False) -> None:
        tool = Tool(fn, name=name, title=title, description=description, annotations=annotations, icons=icons,
                    meta=meta, structured_output=structured_output, resolver_keys=self._resolver_keys,
                    required_scopes=required_scopes, task=task)
        with self._registry_lock:
            if tool.name in self._tools:
                if self.settings.warn_on_duplicate_tools:
                    logger.warning("Tool already exists: %s", tool.name)
                return
            self._tools[tool.name] = tool

    def remove_tool(self, name: str) -> None:
        with self._registry_lock:
            if self._tools.pop(name, None) is None:
                raise ToolError(f"Unknown tool: {name}")

    def get_tool(self, name: Any) -> Tool | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def tool_scopes(self) -> list[str]:
        """Every scope some tool requires, for the protected-resource metadata's ``scopes_supported``."""
        with self._registry_lock:
            tools = list(self._tools.values())
        return list(dict.fromkeys(scope for tool in tools for scope in tool.required_scopes))

    def list_tools(self) -> list[ToolDefinition]:
        with self._registry_lock:
            tools = list(self._tools.values())
        return [tool.definition() for tool in tools]

    def call_tool(self, name: str, arguments: dict[str, Any] | None,
                  context: Context | None = None) -> CallToolResult | InputRequiredResult | CreateTaskResult:
        tool = self.get_tool(name)
        if tool is None:
            return error_result(f"Unknown tool: {name}")
        if tool.task is not None and context is not None:
            return self.tasks.call(tool, arguments, context)
        return tool.run(arguments, context or self._detached_context())

    def _detached_context(self) -> Context:
        session = ServerSession(self, protocol_version="2026-07-28", legacy=False)
        return Context(RequestContext(request_id="direct", meta=None, session=session,
                                      lifespan_context=self.lifespan_context(), server=self, outbox=_Discard(),
                                      questions=_NoQuestions()))

    # --- resources -------------------------------------------------------------------------------
    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, icons: list[Any] | None = None,
                 annotations: Any = None, meta: dict[str, Any] | None = None) -> Callable[[F], F]:
        """Register a function as a resource (static URI) or a template (``{placeholders}``)."""
        _misused("resource", uri)

        def decorator(fn: F) -> F:
            fn_name = name or fn.__name__
            require_sync(fn, fn_name)
            details = dict(title=title, description=description or inspect.getdoc(fn), mime_type=mime_type,
                           icons=icons, annotations=annotations, meta=meta)
            params = classify(fn, fn_name)
            if is_template(uri):
                template = ResourceTemplate(uri, fn, name=fn_name, **details)
                with self._registry_lock:
                    self._templates.setdefault(uri, template)
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
        with self._registry_lock:
            if resource.uri in self._resources:
                if self.settings.warn_on_duplicate_resources:
                    logger.warning("Resource already exists: %s", resource.uri)
                return
            self._resources[resource.uri] = resource

    def list_resources(self) -> list[ResourceDefinition]:
        with self._registry_lock:
            resources = list(self._resources.values())
        return [r.definition() for r in resources]

    def list_resource_templates(self) -> list[TemplateDefinition]:
        with self._registry_lock:
            templates = list(self._templates.values())
        return [t.definition() for t in templates]

    def read_resource(self, uri: str, context: Context | None = None) -> Iterable[ReadResourceContents]:
        result = self.read_resource_result(uri, context)
        if isinstance(result, InputRequiredResult):
            raise RuntimeError(f"resource {uri} asked for input; read it through a client")
        return [ReadResourceContents(c.blob if isinstance(c, BlobResourceContents) else c.text, c.mime_type)
                for c in result.contents]

    def read_resource_result(self, uri: str, context: Context | None = None) -> ReadResourceResult | InputRequiredResult:
        """Read ``uri``: a static resource, else the first template that matches."""
        uri = str(uri)
        ctx = context or self._detached_context()
        legacy = ctx.session.legacy
        resource = self._resources.get(uri)
        try:
            if resource is not None:
                return ReadResourceResult(contents=to_contents(uri, resource.read(), resource.mime_type))
            for template in list(self._templates.values()):
                values = template.match(uri)
                if values is not None:
                    value = template.read(values, ctx)
                    if isinstance(value, InputRequiredResult):
                        return value
                    return ReadResourceResult(contents=to_contents(uri, value, template.mime_type))
        except ResourceNotFoundError as missing:
            raise MCPError(RESOURCE_NOT_FOUND if legacy else INVALID_PARAMS, str(missing), {"uri": uri}) from None
        except MCPError:
            raise
        except Exception:
            kind = "reading resource" if resource is not None else "creating resource from template"
            logger.exception("Error %s %s", kind, uri)
            text = f"Error reading resource {uri}" if resource is not None else \
                f"Error creating resource from template {uri}"
            # 2026-07-28 answers every internal failure alike, as the dispatcher does for tools and prompts.
            raise MCPError(INTERNAL_ERROR, text if legacy or ctx.session.expose_errors else "Internal server error") from None
        raise MCPError(RESOURCE_NOT_FOUND if legacy else INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})

    # --- prompts ---------------------------------------------------------------------------------
    def prompt(self, name: str | None = None, title: str | None = None, description: str | None = None,
               icons: list[Any] | None = None) -> Callable[[F], F]:
        """Register a function as a prompt: ``@mcp.prompt()``."""
        _misused("prompt", name)

        def decorator(fn: F) -> F:
            self.add_prompt(Prompt.from_function(fn, name=name, title=title, description=description, icons=icons))
            return fn

        return decorator

    def add_prompt(self, prompt: Prompt) -> None:
        with self._registry_lock:
            if prompt.name in self._prompts:
                if self.settings.warn_on_duplicate_prompts:
                    logger.warning("Prompt already exists: %s", prompt.name)
                return
            self._prompts[prompt.name] = prompt

    def remove_prompt(self, name: str) -> None:
        with self._registry_lock:
            if self._prompts.pop(name, None) is None:
                raise ValueError(f"Unknown prompt: {name}")

    def list_prompts(self) -> list[PromptDefinition]:
        with self._registry_lock:
            prompts = list(self._prompts.values())
        return [p.definition() for p in prompts]

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None, context: Context | None = None) -> Any:
        prompt = self._prompts.get(name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")  # the caller's mistake: -32602, as for tools/call
        return prompt.render(arguments, context or self._detached_context())

    # --- completion ------------------------------------------------------------------------------
    def completion(self) -> Callable[[F], F]:
        """Register the one completion handler: ``def handler(ref, argument, context) -> Completion | None``."""

        def decorator(fn: F) -> F:
            require_sync(fn, getattr(fn, "__name__", "completion"))
            self._completion = fn
            return fn

        return decorator

    def complete(self, ref: Any, argument: Any, context: Any, ctx: Context | None = None) -> CompleteResult:
        if self._completion is None:
            raise MCPError(-32601, "Method not found: completion/complete")
        completion = self._completion(ref, argument, context)
        return CompleteResult(completion=completion or Completion(values=[]))

    # --- custom routes ---------------------------------------------------------------------------
    def custom_route(self, path: str, methods: list[str], name: str | None = None, *,
                     dns_rebinding_protection: bool = True) -> Callable[[F], F]:
        """Serve a plain ``def handler(request) -> werkzeug.Response`` beside the MCP endpoint.

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
    @property
    def auth_options(self) -> tuple[Any, Any, Any]:
        """``(auth, token_verifier, auth_server_provider)`` as given: what ``wsgi_app()`` protects with."""
        return self.settings.auth, self._token_verifier, self._auth_server_provider

    def wsgi_app(self, **options: Any) -> MCPWSGIApp:
        """The Streamable HTTP endpoint as a WSGI application, for any WSGI server or host framework."""
        from minimcp.server.wsgi import MCPWSGIApp

        return MCPWSGIApp(self, **options)

    streamable_http_app = wsgi_app

    def in_memory_endpoint(self, raise_exceptions: bool = False) -> InMemoryEndpoint:
        """One connection without sockets, as ``Client(mcp)`` uses it; ``raise_exceptions`` lets
        failures outside tool bodies carry their real message instead of the sanitized one."""
        from minimcp.server.memory import InMemoryEndpoint

        return InMemoryEndpoint(self, raise_exceptions)

    def run(self, transport: Literal["stdio", "streamable-http"] = "stdio", **options: Any) -> None:
        """Serve until interrupted: stdio by default, or Streamable HTTP on ``http://HOST:PORT/mcp``."""
        if transport == "stdio":
            from minimcp.server.stdio import serve_stdio

            with self._running():
                serve_stdio(self)
        elif transport == "streamable-http":
            from minimcp.server.wsgi import serve_http

            with self._running():
                serve_http(self, **options)
        else:
            raise ValueError(f"Unknown transport: {transport}")

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        """Bracket a serving loop with the lifespan."""
        self.lifespan_context()
        try:
            yield
        finally:
            self.close()
