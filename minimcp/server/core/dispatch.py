"""The sans-I/O core: one incoming message in, outgoing messages out.

This file knows nothing of sockets, WSGI, subprocesses or threads beyond handing work to the
server's pool. A transport parses bytes into a message, asks ``era_of`` which era it belongs to,
gets the ``Connection`` (a legacy session it looked up, or ``modern_connection`` for a 2026-07-28
request), and calls ``handle_request``, ``handle_notification`` or ``handle_response``. Outgoing
messages go to the request's ``Outbox``; a request that runs on a worker answers ``None`` and its
response arrives later through ``outbox.close``.

The protocol is readable as data: the method table (``minimcp.types.methods``) says which method
exists in which era, which ones run user code on a worker, and which answer with a stream that
stays open (``subscriptions/listen``: its outbox is never closed by a response, only by the client
going away or the server shutting down). The handlers are the ``Server``'s (``on_call_tool=`` and
friends, or what ``MCPServer`` registers); the core answers ``initialize``, ``server/discover``
and ``ping`` itself unless the server registered its own.
Rejections that happen before a handler runs raise ``MCPError``; what HTTP status such a refusal
(or an answer) travels with is the HTTP edge's decision (``edges/http/errors.py``), never
the core's; so are a tool's scopes and its ``Mcp-Param-*`` headers, which the edge checks itself.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Callable, Final, NamedTuple, Protocol

from pydantic import BaseModel, ValidationError

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.caching import hinted
from minimcp.server.core.context import ServerMiddleware, ServerRequestContext, ServerSession
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.plan import Plan
from minimcp.server.core.ports import Planner
from minimcp.server.core.era import LEGACY, MODERN, Era, arrival, era_of_message
from minimcp.server.core.pending import UnexpectedAnswer
from minimcp.server.core.sessions import SERVER_LIFESPAN, Connection
from minimcp.server.core.listens import Listens
from minimcp.server.core.served import ServingServer
from minimcp.shared.transport_context import TransportContext
from minimcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    METHOD_NOT_FOUND,
    DiscoverResult,
    ErrorData,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    RequestId,
    ServerCapabilities,
    dump,
)
from minimcp.types.methods import BOTH, METHODS, Method

if TYPE_CHECKING:
    from minimcp.server.core.caching import CacheHint
    from minimcp.server.core.hooks import HandlerEntry, ServerHooks
    from minimcp.server.core.initialization import InitializationOptions
    from minimcp.server.core.ports import Stores
    from minimcp.server.core.shares import Shares
    from minimcp.server.core.workers import Deadlines, WorkerPool

logger = logging.getLogger("minimcp.server")


class ServedServer(ServingServer, Protocol):
    """The low-level ``Server`` as its dispatcher and the transports see it: the handlers and hooks,
    the pool and the shares, the middleware, what ``initialize`` answers, where state is kept, and
    how it is served. The server satisfies it; nothing that serves it needs to import it."""

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def hooks(self) -> ServerHooks: ...

    @property
    def planner(self) -> Planner: ...

    @property
    def backend(self) -> Stores: ...

    @property
    def pool(self) -> WorkerPool: ...

    @property
    def deadlines(self) -> Deadlines: ...

    @property
    def call_shares(self) -> Shares: ...

    @property
    def middleware(self) -> Sequence[ServerMiddleware[Any]]: ...

    @property
    def cache_hints(self) -> Mapping[str, CacheHint]: ...

    @property
    def _request_handlers(self) -> Mapping[str, HandlerEntry]: ...

    @property
    def _notification_handlers(self) -> Mapping[str, HandlerEntry]: ...

    @property
    def server_info(self) -> Implementation: ...

    @property
    def server_info_wire(self) -> dict[str, Any]: ...

    @property
    def instructions(self) -> str | None: ...

    initialization_options: InitializationOptions

    @property
    def custom_routes(self) -> list[tuple[str, list[str], Callable[..., Any], bool]]: ...

    def get_capabilities(self, *, protocol_version: str | None = None) -> ServerCapabilities: ...

    def new_lifespan(self) -> AbstractContextManager[Any]: ...

    def running(self) -> AbstractContextManager[None]: ...

    def close(self) -> None: ...


class Dispatcher:
    """Routes messages for one low-level ``Server``; shared by every transport and thread."""

    def __init__(self, server: ServedServer, max_listens_per_principal: int | None = None) -> None:
        self.server = server
        self.listens = Listens(max_per_principal=max_listens_per_principal)

    # --- which era, which session ----------------------------------------------------------------
    @staticmethod
    def era_of(message: Message, header_version: str | None = None) -> Era:
        """The era ``message`` belongs to (``era_of_message``), by the eras its method exists in."""
        return era_of_message(message, header_version, _exists_in)

    def modern_connection(self, message: Message, headers: Mapping[str, str] | None = None) -> Connection:
        """The connection of a 2026-07-28 request, described by its envelope (``ModernEra.connection``);
        its ``Mcp-Param-*`` headers are the HTTP edge's to check (``edges.http.param_headers``)."""
        return MODERN.connection(self.server, message, headers)

    def plan(self, message: Message) -> Plan:
        """What request ``message`` is (``Planner.plan``), worked out once and handed down."""
        return self.server.planner.plan(message["method"], message.get("params"))

    def receive(self, message: Message, kind: str, header_version: str | None = None,
                routing: Mapping[str, str] | None = None) -> Arrival:
        """What the core makes of ``message`` as it arrives, in one step: its era and, for a
        self-contained 2026-07-28 message, its connection (``era.arrival``), and a request's plan
        (``plan``)."""
        era, connection = arrival(self.server, message, header_version, routing, _exists_in)
        plan = self.server.planner.plan(message["method"], message.get("params")) if kind == "request" else None
        return Arrival(era, plan, connection)

    def new_legacy_connection(self) -> Connection:
        """A session for a connection about to ``initialize``; the handshake fills it in."""
        return LEGACY.connection(self.server)

    @staticmethod
    def streams(message: Message) -> bool:
        """Whether ``message`` asks for a method that answers with a stream that stays open."""
        name = message.get("method")
        method = METHODS.get(name) if isinstance(name, str) else None
        return method is not None and method.stream

    def _lookup(self, name: Any, era: Era) -> Method | None:
        """How the core treats ``name`` in ``era``; ``None`` when it is not served there."""
        method = METHODS.get(name) if isinstance(name, str) else None
        if method is None and isinstance(name, str) and name in self.server._request_handlers:
            method = CUSTOM
        if method is None or era.table_key not in method.eras or (name not in CORE and name not in self.server._request_handlers):
            return None
        return method

    # --- messages --------------------------------------------------------------------------------
    def handle_request(self, message: Message, connection: Connection, outbox: Outbox,
                       transport: TransportContext, calls: Calls | _Untracked | None = None,
                       here: bool = False, plan: Plan | None = None) -> Message | None:
        """Answer a request now, or (``None``) run it as a pool job that closes ``outbox`` with the answer.

        A call that outlives this method (a worker's, an open stream) is tracked in ``calls`` (by
        default its own connection), where ``notifications/cancelled`` finds it by id; ``UNTRACKED``
        where no later message can name it. A method this era does not serve is answered inline:
        the refusal comes from inside the middleware chain, so middleware sees it.
        ``here``: the caller would only wait for the answer, so a call that can send nothing before
        it (``quiet``) runs on the caller's thread, still as one of the pool's jobs, and its answer
        is returned (in ``outbox`` instead, behind anything the call queued there).
        ``plan``: what the caller already worked out of the request (``plan``), else made here.

        What the dispatcher decides of its own comes first, before anything it hands the request to
        (the shares, the pool, the handler), so the request passes each of them once, in turn.
        """
        request_id = message["id"]
        method = self._lookup(message["method"], connection.era) or _REFUSED
        plan = plan or self.plan(message)
        track: Calls | None = None if isinstance(calls, _Untracked) else (calls or connection)
        if not method.worker:
            if method.stream and track is not None:
                track.begin(request_id, outbox)
                outbox.on_end(functools.partial(track.end, request_id, outbox))
            return self._execute(method, message, connection, outbox, transport, plan)
        timeout = plan.timeout
        # a timed call must leave the receiving thread free to send the timeout's answer
        run_here = here and timeout is None and self.quiet(message, connection, outbox, plan)
        scope_of = self.server.hooks.call_scope
        # made on the receiving thread, while the host's context is here
        scope = None if scope_of is contextlib.nullcontext else scope_of()
        shares = self.server.call_shares
        try:
            principal = shares.admit(transport, connection)  # over its share, refused now: never waits for a worker
        except MCPError as over:
            return jsonrpc.error_from(request_id, over)
        if track is not None:
            track.begin(request_id, outbox)
        disarm = None if timeout is None else self.server.deadlines.arm(
            timeout, functools.partial(self._time_out, message, connection, outbox, transport, timeout))

        def job() -> Message:
            response = None
            try:
                if scope is None:
                    response = self._execute(method, message, connection, outbox, transport, plan)
                else:
                    with scope:
                        response = self._execute(method, message, connection, outbox, transport, plan)
            except BaseException:  # even a handler that calls sys.exit() must answer, or its caller waits forever
                logger.exception("%s ended the worker", message["method"])
            finally:
                if response is None:
                    response = jsonrpc.error(request_id, INTERNAL_ERROR, "Internal server error")
                if disarm is not None:
                    disarm()
                if track is not None:
                    track.end(request_id, outbox)
                shares.give_back(principal)  # before the answer, so the caller's next call finds its share free
            return response

        try:
            if run_here:
                return outbox.answer_here(self.server.pool.run_here(job))
            self.server.pool.submit(lambda: outbox.close(job()))
        except MCPError as busy:
            if disarm is not None:
                disarm()
            if track is not None:
                track.end(request_id, outbox)
            shares.give_back(principal)
            return jsonrpc.error_from(request_id, busy)
        return None

    @staticmethod
    def _time_out(message: Message, connection: Connection, outbox: Outbox, transport: TransportContext,
                  timeout: float) -> None:
        """Answer a call whose time is up (its body runs on, with ``ctx.cancelled`` set)."""
        name = message["params"]["name"]
        logger.warning("tools/call %s timed out after %g s; its body runs on until it returns", name, timeout)
        failure = MCPError(REQUEST_TIMEOUT, f"Tool '{name}' timed out after {timeout:g} seconds", {"tool": name})
        outbox.time_out(connection.era.error_answer(message["id"], failure, transport))

    def quiet(self, message: Message, connection: Connection, outbox: Outbox, plan: Plan) -> bool:
        """Whether a request's handler has nothing to send before its answer, so no one need stream
        while it runs: a call its plan says is silent, behind middleware that all send nothing
        (``ServerMiddleware``), or any request with no back channel to ask on, no log messages
        (none by default in its era, no level asked for) and no progress token. What it still
        sends on its own (a custom notification) travels with the answer."""
        if plan.silent and self._middleware_sends_nothing():
            return True
        if outbox.can_request or connection.log_level is not None or connection.era.log_by_default:
            return False
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return not (isinstance(meta, dict) and "progressToken" in meta)

    def _middleware_sends_nothing(self) -> bool:
        """Whether every middleware promises to send nothing of its own (``sends_nothing``)."""
        for layer in self.server.middleware:
            if not getattr(type(layer), "sends_nothing", False):
                return False
        return True

    @staticmethod
    def opens_session(message: Message, answer: Message | None) -> bool:
        """Whether ``answer`` to ``message`` opened a legacy session the transport now keeps."""
        return message.get("method") == "initialize" and answer is not None and "result" in answer

    def handle_notification(self, message: Message, connection: Connection | None,
                            calls: Connection | None = None) -> None:
        """``connection``: the legacy session the message belongs to (``None`` before it is open);
        ``calls``: where its calls in flight are tracked, for ``notifications/cancelled``."""
        method = message.get("method")
        calls = calls or connection
        if method == "notifications/cancelled" and calls is not None:
            request_id = jsonrpc.request_id_in(message.get("params"))
            if request_id is not None:
                calls.cancel(request_id)
        if connection is None or not isinstance(method, str):
            return
        if method == "notifications/progress":  # on a question of ours, perhaps (and to the handler too)
            connection.progress_heard(message.get("params"))
        try:
            outermost, inner = self._chain(self._notified)
            outermost(self._context(message, connection, None, _NOTIFICATION), inner)
        except Exception:
            logger.exception("the %s handler failed", method)

    def _notified(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """The innermost step for a notification: the handshake's end, then the server's handler."""
        if ctx.method == "notifications/initialized":
            ctx.session.connection.initialized = True
        entry = self.server._notification_handlers.get(ctx.method)
        if entry is not None:
            entry.handler(ctx, entry.params(ctx.params or {}))

    def handle_response(self, message: Message, connection: Connection) -> UnexpectedAnswer | None:
        """A client's answer to a server-to-client request; the refusal when no question of the
        connection awaits it (the HTTP edge answers it 400; a stream has no answer to a response)."""
        try:
            connection.answered(message)
        except UnexpectedAnswer as refused:
            logger.debug("refused a response: %s", refused.message)
            return refused
        return None

    # --- running a handler -----------------------------------------------------------------------
    def _context(self, message: Message, connection: Connection, outbox: Outbox | None,
                 transport: TransportContext, plan: Plan | None = None) -> ServerRequestContext[Any, Any]:
        request_id = message.get("id")
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        lifespan = connection.lifespan_state
        return ServerRequestContext(
            session=ServerSession(connection, outbox, request_id, meta),
            lifespan_context=self.server.lifespan_context() if lifespan is SERVER_LIFESPAN else lifespan,
            protocol_version=connection.protocol_version, method=message["method"],
            params=params if isinstance(params, dict) else None, request_id=request_id, meta=meta,
            transport=transport, server=self.server, outbox=outbox, era=connection.era, plan=plan,
        )

    def _execute(self, method: Method, message: Message, connection: Connection, outbox: Outbox,
                 transport: TransportContext, plan: Plan) -> Message:
        request_id = message["id"]
        try:
            outermost, inner = self._chain(self._answered)
            result = outermost(self._context(message, connection, outbox, transport, plan), inner)
            if method.stream:
                return None  # type: ignore[return-value]
            return jsonrpc.result(request_id, result if isinstance(result, dict) else _wire(result))
        except MCPError as exc:
            return connection.era.error_answer(request_id, exc, transport)
        except ValidationError:
            return jsonrpc.error(request_id, INVALID_PARAMS, "Invalid request parameters")
        except Exception as exc:
            logger.exception("%s failed", message["method"])
            return jsonrpc.error_from(request_id, connection.era.unexpected(exc, connection.expose_errors))

    def _answered(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        """The innermost step for a request: lookup, the era's gate, params, the handler, and its
        result in wire form. It reads ``ctx.method`` and ``ctx.params``, so a middleware that passed
        on a changed context is obeyed."""
        name = ctx.method
        connection = ctx.session.connection
        era = connection.era
        if self._lookup(name, era) is None:
            raise MCPError(METHOD_NOT_FOUND, "Method not found", name)
        if era.handshake:
            era.admit(connection, name)
        server = self.server
        entry = server._request_handlers.get(name)
        if entry is None:
            result: Any = CORE[name](self, ctx)
        else:
            result = entry.handler(ctx, entry.params(ctx.params or {}))
        if isinstance(result, ErrorData):
            raise MCPError.from_error_data(result)  # inside the chain, so middleware sees the failure
        if name in server.cache_hints:
            result = hinted(result, name, server.cache_hints, ctx.plan is not None and ctx.plan.private_listing)
        wire = dump(result) if isinstance(result, BaseModel) else (result if result is not None else {})
        era.finish(result, wire, server.server_info_wire)
        return wire

    def _chain(self, inner: Callable[[ServerRequestContext[Any, Any]], Any]
               ) -> tuple[Callable[[ServerRequestContext[Any, Any], Any], Any], Callable[[ServerRequestContext[Any, Any]], Any]]:
        """The server's middleware around ``inner`` (outermost first; each layer may pass a changed
        context on), as its outermost layer and what that layer calls next, so that a message is
        handed to the first middleware directly (``_unwrapped`` stands in for it where there is none)."""
        layers = self.server.middleware
        if not layers:
            return _unwrapped, inner
        call = inner
        for layer in reversed(layers[1:]):
            call = functools.partial(_layered, layer, call)
        return layers[0], call


def _layered(layer: Callable[[ServerRequestContext[Any, Any], Any], Any], call_next: Any,
             ctx: ServerRequestContext[Any, Any]) -> Any:
    return layer(ctx, call_next)


def _unwrapped(ctx: ServerRequestContext[Any, Any], call_next: Callable[[ServerRequestContext[Any, Any]], Any]) -> Any:
    """The outermost layer of a server with no middleware: the request goes straight on."""
    return call_next(ctx)


def _wire(result: Any) -> dict[str, Any]:
    """What the chain returned, as the response's ``result``: the innermost step's wire dict, or what
    a middleware answered in its place (a model, a dict, ``None`` for an empty result)."""
    if isinstance(result, dict):
        return result
    if result is None:
        return {}
    if isinstance(result, ErrorData):
        raise MCPError.from_error_data(result)
    if isinstance(result, BaseModel):
        return dump(result)
    raise TypeError(f"middleware returned {type(result).__name__}; expected a result model, a dict or None")


# --- the handlers the core owns: the handshake, discovery and ping ------------------------------------
def _initialize(d: Dispatcher, ctx: ServerRequestContext[Any, Any]) -> InitializeResult:
    request = InitializeRequestParams.model_validate(ctx.params or {})
    connection = ctx.session.connection
    connection.initialized = False  # until the client's notifications/initialized, also on a second initialize
    requested = request.protocol_version
    connection.protocol_version = LEGACY.negotiate(requested)
    connection.client_capabilities = request.capabilities
    connection.client_info = request.client_info
    server = d.server
    options = server.initialization_options
    return InitializeResult(protocol_version=connection.protocol_version, capabilities=options.capabilities,
                            server_info=server.server_info, instructions=options.instructions)


def _discover(d: Dispatcher, ctx: ServerRequestContext[Any, Any]) -> DiscoverResult:
    server = d.server
    return DiscoverResult(supported_versions=list(MODERN.versions),
                          capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
                          instructions=server.instructions)


def _ping(d: Dispatcher, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    return {}


#: Methods the core answers itself unless the server registers its own handler.
CORE: dict[str, Callable[[Dispatcher, ServerRequestContext[Any, Any]], Any]] = {
    "initialize": _initialize,
    "server/discover": _discover,
    "ping": _ping,
}

def _exists_in(name: str, era: Era) -> bool:
    """Whether method ``name`` is served in ``era`` (one the protocol does not define: in either)."""
    method = METHODS.get(name)
    return method is None or era.table_key in method.eras


#: A method the server registered that the protocol does not define: either era, on a worker.
CUSTOM = Method("custom", eras=BOTH, worker=True)
#: A method not served in the request's era: refused inline, by the innermost step of the chain.
_REFUSED = Method("refused", eras=BOTH)
_NOTIFICATION = TransportContext(kind="notification", can_send_request=False)


class Arrival(NamedTuple):
    """A message as the core received it (``Dispatcher.receive``)."""

    era: Era
    #: A request's plan; ``None`` for a notification or a response.
    plan: Plan | None
    #: A self-contained 2026-07-28 message's connection; ``None`` for a legacy one.
    connection: Connection | None


class Calls(Protocol):
    """Where a request's calls in flight are tracked by id (a ``Connection``)."""

    def begin(self, request_id: RequestId, outbox: Outbox) -> None: ...

    def end(self, request_id: RequestId, outbox: Outbox) -> None: ...


class _Untracked:
    """``calls`` for a request that no later message can name: a 2026-07-28 request over HTTP,
    alone on a connection made for it, whose era routes nothing by request id (it is cancelled by
    closing its own stream). Tracking it would be bookkeeping no one reads, so ``handle_request``
    tracks nothing for it."""


UNTRACKED: Final = _Untracked()
