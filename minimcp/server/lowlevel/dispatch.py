"""The sans-I/O core: one incoming message in, outgoing messages out.

This file knows nothing of sockets, WSGI, subprocesses or threads beyond handing work to the
server's pool. A transport parses bytes into a message, asks ``classify`` which era it belongs to,
gets the ``ServerSession`` (a legacy session it looked up, or ``modern_session`` for a 2026-07-28
request), and calls ``handle_request``, ``handle_notification`` or ``handle_response``. Outgoing
messages go to the request's ``Outbox``; a request that runs on a worker answers ``None`` and its
response arrives later through ``outbox.close``.

The protocol is readable as data: ``METHODS`` says which method exists in which era, which ones run
user code on a worker, which may answer ``input_required``, which results carry caching hints, and
which answer with a stream that stays open (``subscriptions/listen``: its outbox is never closed by
a response, only by the client going away or the server shutting down).
Rejections that happen before a handler runs raise ``EnvelopeError`` with the HTTP status the
Streamable HTTP binding gives them; everything after is an ordinary JSON-RPC answer.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from pydantic import BaseModel, ValidationError

from minimcp import jsonrpc
from minimcp.jsonrpc import EnvelopeError, MCPError, Message
from minimcp.server.lowlevel.calls import Outbox
from minimcp.server.mcpserver.context import Context, LegacyQuestions, RequestContext
from minimcp.server.headers import check_headers
from minimcp.server.lowlevel.rounds import Binding, InputRequired, ReplayQuestions, open_book, seal
from minimcp.server.lowlevel.sessions import LOG_LEVELS, ServerSession
from minimcp.server.lowlevel.subscriptions import Listens
from minimcp.shared.transport_context import TransportContext
from minimcp.types import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_HANDSHAKE_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    CallToolRequestParams,
    ClientCapabilities,
    CompleteRequestParams,
    DiscoverResult,
    GetPromptRequestParams,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    dump,
)

if TYPE_CHECKING:
    from minimcp.server.mcpserver.server import MCPServer

logger = logging.getLogger("minimcp.server")

Era = Literal["legacy", "2026-07-28"]
LEGACY: Literal["legacy"] = "legacy"
MODERN: Literal["2026-07-28"] = "2026-07-28"
BOTH = frozenset({LEGACY, MODERN})

#: How many entries one page of a list result holds.
PAGE_SIZE = 100


Handler = Callable[["Dispatcher", dict[str, Any], Context], Any]


@dataclass(frozen=True)
class Method:
    handler: Handler
    eras: frozenset[str] = BOTH
    worker: bool = False  # runs user code that may block, so it goes to the pool
    rounds: bool = False  # may answer input_required on 2026-07-28
    cache_scope: str | None = None  # 2026-07-28 results carry ttlMs and this cacheScope
    stream: bool = False  # answers with a stream of notifications that stays open (no response yet)


class Dispatcher:
    """Routes messages for one ``MCPServer``; shared by every transport and thread."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.listens = Listens()

    # --- which era, which session ----------------------------------------------------------------
    @staticmethod
    def classify(message: Message, header_version: str | None = None) -> Era:
        """Modern when the request says so in ``_meta`` or a non-legacy version header, or uses a
        modern-only method; legacy otherwise (protocol.md §1.2)."""
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("_meta"), dict) and META_PROTOCOL_VERSION in params["_meta"]:
            return MODERN
        if header_version is not None and header_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return MODERN
        if message.get("method") in ("server/discover", "subscriptions/listen"):
            return MODERN
        return LEGACY

    def modern_session(self, message: Message, headers: Mapping[str, str] | None = None) -> ServerSession:
        """Validate a 2026-07-28 request's ``_meta`` (and, over HTTP, its headers) and describe it."""
        header_version = _header(headers, "mcp-protocol-version") if headers is not None else None
        if headers is not None and header_version is None:
            raise EnvelopeError(400, HEADER_MISMATCH, "Missing MCP-Protocol-Version header")
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict):
            raise EnvelopeError(400, INVALID_PARAMS, f"Missing required _meta with '{META_PROTOCOL_VERSION}'")
        version = meta.get(META_PROTOCOL_VERSION)
        if not isinstance(version, str):
            raise EnvelopeError(400, INVALID_PARAMS, f"_meta must carry '{META_PROTOCOL_VERSION}' as a string")
        capabilities = meta.get(META_CLIENT_CAPABILITIES)
        if not isinstance(capabilities, dict):
            raise EnvelopeError(400, INVALID_PARAMS, f"_meta must carry '{META_CLIENT_CAPABILITIES}' as an object")
        if headers is not None and header_version != version:
            raise EnvelopeError(400, HEADER_MISMATCH,
                                f"MCP-Protocol-Version header {header_version!r} does not match _meta {version!r}")
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise EnvelopeError(400, UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version}",
                                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": version})
        if headers is not None:
            check_headers(message, headers, self.server)
        if "id" in message:
            self._method(message.get("method"), MODERN)
        log_level = meta.get(META_LOG_LEVEL)
        if log_level is not None and log_level not in LOG_LEVELS:
            raise EnvelopeError(400, INVALID_PARAMS, f"Invalid log level in _meta: {log_level!r}")
        try:
            client_capabilities = ClientCapabilities.model_validate(capabilities)
            info = meta.get(META_CLIENT_INFO)
            client_info = Implementation.model_validate(info) if isinstance(info, dict) else None
        except ValidationError:
            raise EnvelopeError(400, INVALID_PARAMS, "Invalid clientCapabilities or clientInfo in _meta") from None
        return ServerSession(self.server, protocol_version=version, client_capabilities=client_capabilities,
                             client_info=client_info, legacy=False, log_level=log_level)

    def new_legacy_session(self) -> ServerSession:
        """A session for a connection about to ``initialize``; the handshake fills it in."""
        return ServerSession(self.server, protocol_version=LATEST_HANDSHAKE_VERSION, legacy=True)

    @staticmethod
    def streams(message: Message) -> bool:
        """Whether ``message`` asks for a method that answers with a stream that stays open."""
        method = METHODS.get(message.get("method"))  # type: ignore[arg-type]
        return method is not None and method.stream

    def required_scopes(self, message: Message) -> list[str]:
        """The OAuth scopes a request needs beyond its endpoint's: a called tool's ``required_scopes``.
        The transport decides what a missing scope costs (over HTTP, a 403)."""
        if message.get("method") != "tools/call":
            return []
        params = message.get("params")
        tool = self.server.get_tool(params.get("name")) if isinstance(params, dict) else None
        return tool.required_scopes if tool is not None else []

    def _method(self, name: Any, era: Era) -> Method:
        method = METHODS.get(name) if isinstance(name, str) else None
        if method is None or era not in method.eras:
            if era == MODERN:
                raise EnvelopeError(404, METHOD_NOT_FOUND, f"Method not found: {name}")
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {name}")
        return method

    # --- messages --------------------------------------------------------------------------------
    def handle_request(self, message: Message, session: ServerSession, outbox: Outbox,
                       transport: TransportContext) -> Message | None:
        """Answer a request now, or (``None``) run it on a worker that closes ``outbox`` with the answer."""
        request_id = message["id"]
        era: Era = LEGACY if session.legacy else MODERN
        try:
            method = self._method(message["method"], era)
            if session.legacy and not session.initialized and message["method"] not in ("initialize", "ping"):
                raise MCPError(INVALID_REQUEST, "Received a request before initialization was complete")
        except EnvelopeError:
            raise
        except MCPError as exc:
            return jsonrpc.error_from(request_id, exc)
        if method.stream:
            return self._open_stream(method, message, session, outbox, transport)
        if not method.worker:
            return self._execute(method, message, session, outbox, transport)
        session.begin(request_id, outbox)
        scope = self.server.call_scope()  # on the receiving thread, while the host's context is here

        def job() -> None:
            response = jsonrpc.error(request_id, INTERNAL_ERROR, "Internal server error")
            try:
                with scope:
                    response = self._execute(method, message, session, outbox, transport)
            except BaseException:  # even a handler that calls sys.exit() must answer, or its caller waits forever
                logger.exception("%s ended the worker", message["method"])
            finally:
                session.end(request_id)
                outbox.close(response)

        try:
            self.server.pool.submit(job)
        except MCPError as busy:
            session.end(request_id)
            return jsonrpc.error_from(request_id, busy)
        return None

    def handle_notification(self, message: Message, session: ServerSession | None) -> None:
        method = message.get("method")
        if session is None:
            return
        if method == "notifications/initialized":
            session.initialized = True
        elif method == "notifications/cancelled":
            request_id = jsonrpc.request_id_in(message.get("params"))
            outbox = session.channel(request_id) if request_id is not None else None
            if outbox is not None:
                outbox.abort()

    def handle_response(self, message: Message, session: ServerSession) -> None:
        """A client's answer to a server-to-client request; unknown ids are ignored."""
        if not session.pending.answer(message):
            logger.debug("ignored a response with unknown id %r", message.get("id"))

    # --- running a handler -----------------------------------------------------------------------
    def _request_context(self, message: Message, session: ServerSession, outbox: Outbox,
                         transport: TransportContext) -> RequestContext[Any]:
        request_id = message["id"]
        params = message.get("params") or {}
        return RequestContext(
            request_id=request_id, meta=params.get("_meta"), session=session,
            lifespan_context=self.server.lifespan_context(), server=self.server, outbox=outbox,
            questions=LegacyQuestions(session, request_id), transport=transport,
        )

    def _open_stream(self, method: Method, message: Message, session: ServerSession, outbox: Outbox,
                     transport: TransportContext) -> Message | None:
        """Start a stream method: its handler only registers ``outbox``, which stays open with no response."""
        ctx = Context(self._request_context(message, session, outbox, transport))
        try:
            method.handler(self, message.get("params") or {}, ctx)
        except MCPError as exc:
            return jsonrpc.error_from(message["id"], exc)
        except ValidationError:
            return jsonrpc.error(message["id"], INVALID_PARAMS, "Invalid request parameters")
        return None

    def _execute(self, method: Method, message: Message, session: ServerSession, outbox: Outbox,
                 transport: TransportContext) -> Message:
        request_id = message["id"]
        params = message.get("params") or {}
        try:
            rc = self._request_context(message, session, outbox, transport)
            if method.rounds and not session.legacy:
                result = self._run_rounds(method, message["method"], params, rc)
            else:
                result = method.handler(self, params, Context(rc))
            wire = dump(result) if isinstance(result, BaseModel) else result
            if not session.legacy:
                self._modern_result(wire, method)
            elif isinstance(result, InputRequiredResult):
                raise MCPError(INTERNAL_ERROR, "Handler returned an invalid result")
            return jsonrpc.result(request_id, wire)
        except MCPError as exc:
            return jsonrpc.error_from(request_id, exc)
        except ValidationError:
            return jsonrpc.error(request_id, INVALID_PARAMS, "Invalid request parameters")
        except Exception as exc:
            logger.exception("%s failed", message["method"])
            if session.legacy:
                return jsonrpc.error(request_id, 0, str(exc))
            text = str(exc) if session.expose_errors else "Internal server error"
            return jsonrpc.error(request_id, INTERNAL_ERROR, text)

    def _modern_result(self, wire: dict[str, Any], method: Method) -> None:
        wire.setdefault("resultType", "complete")
        if wire["resultType"] == "complete" and method.cache_scope is not None:
            wire.setdefault("ttlMs", self.server.cache_ttl_ms)
            private = method.cache_scope == "public" and self.server.listings_vary_by_user
            wire.setdefault("cacheScope", "private" if private else method.cache_scope)
        wire.setdefault("_meta", {}).setdefault(META_SERVER_INFO, self.server.server_info_wire)

    def _run_rounds(self, method: Method, name: str, params: dict[str, Any], rc: RequestContext[Any]) -> Any:
        """Run a handler that may ask, turning open questions into an ``input_required`` result."""
        server = self.server
        target = params.get("name") if name != "resources/read" else params.get("uri")
        arguments = params.get("arguments") if name != "resources/read" else None
        security = server.request_state_security
        principal = security.bind_principal(rc) if security.bind_principal else None
        binding = Binding(name, str(target), arguments, security.audience or server.name, principal)
        book = open_book(security, binding, params.get("requestState"), params.get("inputResponses"))
        rc.questions = ReplayQuestions(book)
        rc.input_responses = params.get("inputResponses")
        rc.request_state = book.handler_state
        try:
            result = method.handler(self, params, Context(rc))
        except InputRequired:
            result = None
        if book.pending:
            return InputRequiredResult(input_requests=book.pending,
                                       request_state=seal(security, book.payload(binding, None)))
        if isinstance(result, InputRequiredResult):
            state = seal(security, book.payload(binding, result.request_state))
            return result.model_copy(update={"request_state": state})
        return result


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


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


# --- handlers: each takes (dispatcher, params, ctx) and returns a result model or dict -------------
def _initialize(d: Dispatcher, params: dict[str, Any], ctx: Context) -> InitializeResult:
    request = InitializeRequestParams.model_validate(params)
    session = ctx.session
    requested = request.protocol_version
    session.protocol_version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    session.client_capabilities = request.capabilities
    session.client_info = request.client_info
    server = d.server
    return InitializeResult(protocol_version=session.protocol_version, capabilities=server.capabilities(),
                            server_info=server.server_info, instructions=server.instructions)


def _discover(d: Dispatcher, params: dict[str, Any], ctx: Context) -> DiscoverResult:
    server = d.server
    return DiscoverResult(supported_versions=list(MODERN_PROTOCOL_VERSIONS), capabilities=server.capabilities(),
                          instructions=server.instructions)


def _empty(d: Dispatcher, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {}


def _lister(items: Callable[[MCPServer], list[Any]], result: type[Any], field: str) -> Handler:
    """A ``*/list`` handler: one page of ``items`` under ``field`` of ``result``, with the next cursor."""

    def handler(d: Dispatcher, params: dict[str, Any], ctx: Context) -> Any:
        page, cursor = _page(items(d.server), PaginatedRequestParams.model_validate(params).cursor)
        return result(**{field: page, "next_cursor": cursor})

    return handler


def _call_tool(d: Dispatcher, params: dict[str, Any], ctx: Context) -> Any:
    request = CallToolRequestParams.model_validate({k: v for k, v in params.items() if k != "inputResponses"})
    return d.server.call_tool(request.name, request.arguments, context=ctx)


def _read_resource(d: Dispatcher, params: dict[str, Any], ctx: Context) -> Any:
    request = ReadResourceRequestParams.model_validate({k: v for k, v in params.items() if k != "inputResponses"})
    return d.server.read_resource_result(request.uri, context=ctx)


def _subscribe(d: Dispatcher, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    ctx.session.subscriptions.add(SubscribeRequestParams.model_validate(params).uri)
    return {}


def _unsubscribe(d: Dispatcher, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    ctx.session.subscriptions.discard(SubscribeRequestParams.model_validate(params).uri)
    return {}


def _get_prompt(d: Dispatcher, params: dict[str, Any], ctx: Context) -> Any:
    request = GetPromptRequestParams.model_validate({k: v for k, v in params.items() if k != "inputResponses"})
    return d.server.get_prompt(request.name, request.arguments, context=ctx)


def _complete(d: Dispatcher, params: dict[str, Any], ctx: Context) -> Any:
    request = CompleteRequestParams.model_validate(params)
    return d.server.complete(request.ref, request.argument, request.context, ctx)


def _listen(d: Dispatcher, params: dict[str, Any], ctx: Context) -> None:
    request = SubscriptionsListenRequestParams.model_validate(params)
    rc = ctx.request_context
    d.listens.open(rc.request_id, request.notifications, d.server.capabilities(), rc.outbox,
                   extra=d.server.tasks.listen_filter(params.get("notifications"), ctx))


def _set_level(d: Dispatcher, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    ctx.session.log_level = SetLevelRequestParams.model_validate(params).level
    return {}


LEGACY_ONLY = frozenset({LEGACY})
MODERN_ONLY = frozenset({MODERN})

METHODS: dict[str, Method] = {
    "initialize": Method(_initialize, LEGACY_ONLY),
    "ping": Method(_empty, LEGACY_ONLY),
    "server/discover": Method(_discover, MODERN_ONLY, cache_scope="public"),
    "tools/list": Method(_lister(lambda s: s.list_tools(), ListToolsResult, "tools"), cache_scope="public"),
    "tools/call": Method(_call_tool, worker=True, rounds=True),
    "resources/list": Method(_lister(lambda s: s.list_resources(), ListResourcesResult, "resources"),
                             cache_scope="public"),
    "resources/templates/list": Method(_lister(lambda s: s.list_resource_templates(), ListResourceTemplatesResult,
                                               "resource_templates"), cache_scope="public"),
    "resources/read": Method(_read_resource, worker=True, rounds=True, cache_scope="private"),
    "resources/subscribe": Method(_subscribe, LEGACY_ONLY),
    "resources/unsubscribe": Method(_unsubscribe, LEGACY_ONLY),
    "prompts/list": Method(_lister(lambda s: s.list_prompts(), ListPromptsResult, "prompts"), cache_scope="public"),
    "prompts/get": Method(_get_prompt, worker=True, rounds=True),
    "completion/complete": Method(_complete),
    "subscriptions/listen": Method(_listen, MODERN_ONLY, stream=True),
    "logging/setLevel": Method(_set_level, LEGACY_ONLY),
    # The tasks extension (minimcp.server.tasks): answered from the task store, never on a worker.
    "tasks/get": Method(lambda d, params, ctx: d.server.tasks.get(params, ctx)),
    "tasks/update": Method(lambda d, params, ctx: d.server.tasks.update(params, ctx)),
    "tasks/cancel": Method(lambda d, params, ctx: d.server.tasks.cancel(params, ctx)),
}
