"""What the server knows about one client: its era, its declarations, and (legacy) its session.

A legacy connection opens with ``initialize`` and lives as a ``Connection`` until it is deleted,
expires or its transport ends; it owns the table of server-to-client requests awaiting answers and
the standalone channel (the HTTP GET stream, or the stdio/in-memory connection itself).

A 2026-07-28 request carries everything in its own ``_meta``; it gets a short-lived
``Connection`` of its own that can send nothing unprompted, so handlers see one interface.
A handler sees either through a ``ServerSession`` bound to its request (the official API,
``context.py``); an HTTP endpoint keeps its legacy sessions in a ``SessionManager``
(``session_manager.py``). A connection's parts each have a module: what the client declared
(``declarations.py``), the calls in flight and the standalone channel (``channels.py``), the
questions awaiting answers (``asking.py``), the resumable streams (``retention.py``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, get_args

from pydantic import BaseModel, ValidationError

from minimcp import jsonrpc
from minimcp.server.core.asking import OpenQuestions, QuestionProgress, checked_timeout
from minimcp.server.core.channels import Channels
from minimcp.server.core.declarations import ClientDeclarations
from minimcp.server.core.era import LEGACY, Era, era_of_version
from minimcp.server.core.outbox import EventLog, Outbox
from minimcp.server.core.pending import PendingRequests, take_answer
from minimcp.server.core.retention import RetainedStreams
from minimcp.server.core.workers import monotonic
from minimcp.types import (
    LATEST_HANDSHAKE_VERSION,
    ClientCapabilities,
    CreateMessageResult,
    ElicitResult,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    ListRootsResult,
    LoggingLevel,
    RequestId,
    dump,
)

if TYPE_CHECKING:
    from minimcp.jsonrpc import Message
    from minimcp.server.core.served import ServingServer

__all__ = ["LOG_LEVELS", "Connection", "Elsewhere"]

logger = logging.getLogger("minimcp.server.session")

#: The protocol log levels, least severe first (the order ``logging/setLevel`` thresholds follow).
LOG_LEVELS: tuple[str, ...] = get_args(LoggingLevel)


#: ``Connection.lifespan_state`` when no driver gave one: its handlers see the server's own
#: lifespan (``Server.lifespan_context``, entered on first use), which the dispatcher asks for.
SERVER_LIFESPAN: Any = object()

#: The result of each server-to-client request, for ``Connection.send_request``.
_RESULT_FOR: dict[str, type[BaseModel]] = {
    "sampling/createMessage": CreateMessageResult,
    "elicitation/create": ElicitResult,
    "roots/list": ListRootsResult,
    "ping": EmptyResult,
}


class Elsewhere(Protocol):
    """A session's way to the other processes that serve it (``core/shared_sessions.py``)."""

    def tell(self, kind: str, body: dict[str, Any], keep: bool = False) -> None:
        """Send ``body`` to every process; the one holding what ``kind`` is for takes it. ``keep``:
        also keep it for a process that missed it (an answer its worker must not lose)."""

    def answer(self, message: Message) -> bool:
        """Take a client's answer for the session's question that awaits it, wherever it was asked;
        whether one did."""


def _valid(model: type[BaseModel], raw: Any) -> Any:
    """``raw`` as ``model``, or ``None`` when it is missing or of the wrong shape."""
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def _with_meta(params: dict[str, Any] | None, meta: dict[str, Any] | None) -> dict[str, Any] | None:
    return {**(params or {}), "_meta": meta} if meta else params


class Connection:
    """The server's side of one connection (legacy) or of one self-contained request (2026-07-28).

    It holds what outlives a request, each concern in a part of its own: the client's declarations
    (``ClientDeclarations``), the calls in flight and the standalone channel (``Channels``), the
    questions awaiting answers (``OpenQuestions``), the resumable streams (``RetainedStreams``); and
    itself, the session's identity, era, log level and lifetime. Handlers never see it directly;
    they get a ``ServerSession`` bound to their request.
    """

    # A legacy connection makes its parts at once: many threads use them (each call's worker, the
    # POSTs bringing answers, the GET stream). A self-contained 2026-07-28 request's connection is
    # used by one thread at a time (the one running its handler) and never has a standalone
    # channel, a question awaiting an answer or a stream to resume, so it makes one on first use.
    @functools.cached_property
    def _channels(self) -> Channels:
        return Channels()

    @functools.cached_property
    def _questions(self) -> OpenQuestions:
        return OpenQuestions()

    @functools.cached_property
    def _streams(self) -> RetainedStreams:
        return RetainedStreams()

    # Declarations given raw (``declared``: a 2026-07-28 envelope's, already proven to validate)
    # become a part only when first read, which most handlers never do; its one reader is the
    # thread running the request's handler.
    @functools.cached_property
    def _declarations(self) -> ClientDeclarations:
        return ClientDeclarations(raw=self._declared)

    def __init__(
        self,
        server: ServingServer | None = None,
        *,
        protocol_version: str,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        era: Era | None = None,
        log_level: LoggingLevel | None = None,
        declared: tuple[Any, Any] | None = None,
    ) -> None:
        """``declared``: a 2026-07-28 envelope's ``clientCapabilities`` and ``clientInfo``, raw, in
        place of the two models, when an identical pair already validated (``ClientDeclarations``)."""
        self._server = server
        self.id: str | None = None
        self.era = era or era_of_version(protocol_version)
        self.protocol_version = protocol_version
        if declared is None:
            self._declarations = ClientDeclarations(client_capabilities, client_info)
        else:
            self._declared = declared
        if self.era.legacy:
            self._channels, self._questions, self._streams = Channels(), OpenQuestions(), RetainedStreams()
        self.log_level = log_level
        self.initialized = False
        #: When the client's idle clock last started: it sent something, or was asked something.
        #: A plain float, written without a lock: storing one is atomic.
        self.last_seen = monotonic()
        #: The resource URIs this legacy session subscribed to (``resources/subscribe``).
        self.subscriptions: set[str] = set()
        self.closed = False
        #: Tell the client the real text of internal failures (an in-memory client that asked to see them).
        self.expose_errors = False
        #: The authenticated user that opened this legacy session over HTTP; only they may use its id.
        self.principal: str | None = None
        #: Whom this connection's questions count against (``core/shares.py``): set when the HTTP
        #: edge keeps it among other clients' sessions; ``None`` on a one-client transport.
        self.share_principal: str | None = None
        #: The other processes serving this legacy session (a shared backend,
        #: ``core/shared_sessions.py``): where an answer, a cancel or a notification goes that
        #: nothing in this process takes. ``None``: the session lives in this process only.
        self.elsewhere: Elsewhere | None = None
        #: Per-connection scratch state of the application's, kept across its requests.
        self.state: dict[str, Any] = {}
        #: Cleanups pushed by handlers or middleware, run (last first) when the connection ends.
        self.exit_stack = contextlib.ExitStack()
        #: What handlers see as ``ctx.lifespan_context`` when a driver (``serve_one``,
        #: ``serve_connection``) was given the lifespan's state; else the server's own.
        self.lifespan_state: Any = SERVER_LIFESPAN

    # --- built by hand, as the official ``mcp.server.connection`` builds them -------------------
    @classmethod
    def from_envelope(cls, protocol_version: str, client_info: Any, client_capabilities: Any, *,
                      outbound: Any = None) -> Connection:
        """A ready connection from a 2026-07-28 request's ``_meta``, for ``serve_one``; a value of the
        wrong shape reads as not given. Nothing leaves it but the request's own messages, so the
        official ``outbound`` has no use here."""
        connection = cls(protocol_version=protocol_version, client_info=_valid(Implementation, client_info),
                         client_capabilities=_valid(ClientCapabilities, client_capabilities))
        connection.initialized = True
        return connection

    @classmethod
    def for_loop(cls, outbound: Any = None, *, session_id: str | None = None,
                 protocol_version_hint: str | None = None) -> Connection:
        """A legacy connection that ``serve_connection`` serves over a stream, ready once the client's
        ``initialize`` arrives. ``outbound`` (the official loop's dispatcher) is not needed: the
        stream the connection is served on is its standalone channel."""
        connection = cls(protocol_version=protocol_version_hint or LATEST_HANDSHAKE_VERSION, era=LEGACY)
        connection.id = session_id
        return connection

    def serving(self, server: ServingServer, lifespan_state: Any = None) -> Connection:
        """This connection as one of ``server``'s, its handlers seeing ``lifespan_state``: what a
        driver does with a connection built by hand."""
        if self._server is not None and self._server is not server:
            raise ValueError("this Connection is already served by another server; build one per server")
        self._server = server
        self.lifespan_state = lifespan_state
        return self

    @property
    def session_id(self) -> str | None:
        """The legacy session's ``Mcp-Session-Id``; ``None`` on stdio, in memory and on 2026-07-28."""
        return self.id

    # --- what the client declared ------------------------------------------------------------
    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client said it can do (nothing, until it said)."""
        return self._declarations.capabilities

    @client_capabilities.setter
    def client_capabilities(self, capabilities: ClientCapabilities) -> None:
        self._declarations.capabilities = capabilities

    @property
    def client_info(self) -> Implementation | None:
        """Who the client said it is; ``None`` until it named itself."""
        return self._declarations.info

    @client_info.setter
    def client_info(self, info: Implementation | None) -> None:
        self._declarations.info = info

    @property
    def client_params(self) -> InitializeRequestParams | None:
        """What the client declared, as ``initialize`` params; ``None`` until it named itself."""
        if self.client_info is None:
            return None
        return InitializeRequestParams(protocol_version=self.protocol_version,
                                       capabilities=self.client_capabilities, client_info=self.client_info)

    @property
    def has_standalone_channel(self) -> bool:
        """Whether messages not tied to a request can reach this client now."""
        return self.era.channel(self, None) is not None

    @property
    def initialize_accepted(self) -> bool:
        """Whether the client has named itself (``initialize``, or a 2026-07-28 envelope with
        ``clientInfo``) or finished the handshake."""
        return self.initialized or self.client_info is not None

    # --- what a handler asks -------------------------------------------------------------
    @property
    def can_send_request(self) -> bool:
        return self.era.ask_back and not self.closed

    def check_client_capability(self, capability: ClientCapabilities) -> bool:
        return self._declarations.covers(dump(capability))

    check_capability = check_client_capability

    def declares(self, required: dict[str, Any]) -> bool:
        """``check_client_capability`` for a wire-shaped capability object."""
        return self._declarations.covers(required)

    def capability(self, name: str) -> Any:
        """One capability the client declared, in wire form (``None``: not declared)."""
        return self._declarations.capability(name)

    def log_enabled(self, level: str) -> bool:
        """Whether a protocol log message at ``level`` may go to this client.

        A legacy client that never called ``logging/setLevel`` receives everything (as the official
        SDK does); a 2026-07-28 request receives nothing unless its ``_meta`` names a level.
        """
        if self.log_level is None:
            return self.era.log_by_default
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)

    # --- request bookkeeping (transports and the dispatcher) -----------------------------------
    def begin(self, request_id: RequestId, outbox: Outbox) -> None:
        self.last_seen = monotonic()
        self._channels.begin(request_id, outbox)

    def end(self, request_id: RequestId, outbox: Outbox) -> None:
        """Forget the call ``request_id`` while ``outbox`` is still its outbox: a client may reuse an
        id once its call was cancelled, before the old call's worker has wound down."""
        self.last_seen = monotonic()
        self._channels.end(request_id, outbox)

    @property
    def pending(self) -> PendingRequests:
        """The server-to-client requests of this connection that await the client's answers."""
        return self._questions.pending

    @property
    def working(self) -> bool:
        """Whether some call of this session runs server code rather than waiting on the client:
        a worker that computes keeps its session alive, one blocked on an unanswered question does not."""
        return len(self._channels) > len(self.pending)

    @property
    def open_here(self) -> bool:
        """Whether a call or the standalone stream of this connection is open in this process."""
        return self._channels.open

    @property
    def standalone(self) -> Outbox | None:
        """The standalone channel, while one is open in this process."""
        return self._channels.standalone

    def attach_standalone(self, outbox: Outbox) -> bool:
        """Make ``outbox`` this connection's standalone channel, unless one is already open.

        From then on it hears the resource updates it subscribed to (``ctx.notify_resource_updated``)
        and the server's own announcements (``MCPServer.enable``/``disable``).
        """
        if not self._channels.attach(outbox):
            return False
        self._server.dispatcher.listens.attach(self)  # type: ignore[union-attr]  # only a served connection streams
        return True

    def detach_standalone(self, outbox: Outbox) -> None:
        """Forget ``outbox`` as the standalone channel, if it still is the one."""
        if self._channels.detach(outbox):
            self._server.dispatcher.listens.detach(self)  # type: ignore[union-attr]  # only a served connection streams

    def progress_heard(self, params: Any, *, here_only: bool = False) -> None:
        """A client's ``notifications/progress`` on one of this server's questions: to the callback
        that asked, here or (unless ``here_only``) on the process that asked. A failing callback is
        logged; the notification has no one to answer."""
        if self._questions.progress(params) is False and self.elsewhere is not None and not here_only:
            self.elsewhere.tell("progress", {"params": params})

    def close_standalone_stream(self, *, here_only: bool = False) -> None:
        """End the standalone GET stream now, in this process or (unless ``here_only``) the one
        holding it: the official ``close_standalone_sse_stream``. The client may open another; what
        is sent meanwhile is dropped, as this stream keeps no log."""
        standalone = self._channels.standalone
        if standalone is not None:
            standalone.abort()
        elif self.elsewhere is not None and not here_only:
            self.elsewhere.tell("close_standalone", {})

    # --- resumable response streams (legacy SSE, ``Last-Event-ID``) ----------------------------
    def retain_stream(self, log: EventLog) -> None:
        """Keep ``log`` so a client that lost its connection can resume it by event id, for a while
        (``minimcp.server.core.retention``)."""
        self._streams.keep(log)

    def stream(self, stream_id: str) -> EventLog | None:
        return self._streams.get(stream_id)

    def close(self) -> None:
        """End the session: every worker waiting on this client wakes with "Connection closed", then
        the cleanups on ``exit_stack`` run (one that fails is logged)."""
        self.closed = True
        self.pending.close(jsonrpc.connection_closed())
        if self._server is not None:
            self._server.dispatcher.listens.detach(self)
        for outbox in self._channels.every():
            outbox.abort()
        try:
            self.exit_stack.close()
        except Exception:
            logger.exception("a cleanup on the connection's exit_stack failed")

    # --- sending -------------------------------------------------------------------------------
    def channel(self, related_request_id: RequestId | None) -> Outbox | None:
        """The stream of the call ``related_request_id`` in this process, or for ``None`` the
        standalone channel."""
        return self._channels.outbox(related_request_id)

    def notify(self, method: str, params: Mapping[str, Any] | None = None, opts: Mapping[str, Any] | None = None, *,
               related_request_id: RequestId | None = None) -> None:
        """Send on the request's stream, or the standalone channel; dropped where neither exists
        (a notification is advisory: this never raises). ``opts``, the official ``CallOptions``,
        holds nothing a notification uses."""
        channel = self.era.channel(self, related_request_id)
        message = jsonrpc.notification(method, params if params is None or isinstance(params, dict) else dict(params))
        if channel is not None:
            channel.send(message)
        elif related_request_id is None and self.elsewhere is not None:
            self.elsewhere.tell("notify", {"m": message})  # the standalone stream may be open on another process
        else:
            logger.debug("dropped %s: no channel to this client", method)

    def answered(self, message: Message) -> None:
        """Route a client's answer to the worker waiting on it, here or on the process that asked;
        ``UnexpectedAnswer`` when no question of this connection awaits it."""
        take_answer(message, self.pending.answer if self.elsewhere is None else self.elsewhere.answer)

    def cancel(self, request_id: RequestId) -> None:
        """Stop the call ``request_id`` (``notifications/cancelled``), wherever it runs."""
        outbox = self.channel(request_id)
        if outbox is not None:
            outbox.cancel()
        elif self.elsewhere is not None:
            self.elsewhere.tell("cancel", {"id": request_id})

    def ask(self, method: str, params: dict[str, Any], related_request_id: RequestId | None,
            timeout: float | None = None, on_progress: QuestionProgress | None = None) -> dict[str, Any]:
        """Ask the client and wait ``timeout`` seconds at most (by default the server's
        ``back_channel_timeout``); the raw result. With ``on_progress``, the question carries a
        ``progressToken`` whose notifications (here, or relayed from another process) it hears
        until the question is answered."""
        channel = self.era.channel(self, related_request_id)
        if channel is None or self._server is None:
            raise jsonrpc.NoBackChannelError(method)
        # The client's clock starts now: the time the server computed before asking (and, under
        # load, waited for a worker) is not time the client had to answer. Set before the question
        # is pending, while the call still counts as working, so no sweep sees the old value.
        self.last_seen = monotonic()
        shares = self._server.question_shares
        shares.take(self.share_principal)
        try:
            return self._questions.ask(channel, method, params,
                                       self._server.back_channel_timeout if timeout is None else timeout, on_progress)
        finally:
            shares.give_back(self.share_principal)

    # --- the official ``Connection``'s standalone-stream API --------------------------------------
    def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                         opts: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Ask on the standalone channel; ``NoBackChannelError`` where there is none (2026-07-28).
        ``opts``, the official ``CallOptions``: its ``timeout`` bounds this request's wait; its other
        keys (progress, resumption, a caller's own id) mean nothing to a server's channel."""
        timeout = checked_timeout((opts or {}).get("timeout"), "opts['timeout']")
        return self.ask(method, dict(params or {}), None, timeout)

    def send_request(self, req: BaseModel, *, result_type: type[BaseModel] | None = None,
                     opts: Mapping[str, Any] | None = None) -> BaseModel:
        """Ask with a request model and validate the answer (``result_type`` for a custom request)."""
        wire = dump(req)
        raw = self.send_raw_request(wire["method"], wire.get("params"), opts)
        model = result_type or _RESULT_FOR.get(wire["method"])
        if model is None:
            raise KeyError(f"pass result_type= for the custom request {wire['method']!r}")
        return model.model_validate(raw)

    def ping(self, *, meta: dict[str, Any] | None = None, opts: Mapping[str, Any] | None = None) -> None:
        self.send_raw_request("ping", {"_meta": meta} if meta else None, opts)

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None, *,
            meta: dict[str, Any] | None = None) -> None:
        """Protocol logging on the standalone channel (dropped on 2026-07-28, which has none: there a
        log message rides only the request that opted in)."""
        if self.log_enabled(level):
            params: dict[str, Any] = {"level": level, "data": data}
            if logger is not None:
                params["logger"] = logger
            self.notify("notifications/message", _with_meta(params, meta))

    def send_tool_list_changed(self, *, meta: dict[str, Any] | None = None) -> None:
        self.notify("notifications/tools/list_changed", _with_meta(None, meta))

    def send_prompt_list_changed(self, *, meta: dict[str, Any] | None = None) -> None:
        self.notify("notifications/prompts/list_changed", _with_meta(None, meta))

    def send_resource_list_changed(self, *, meta: dict[str, Any] | None = None) -> None:
        self.notify("notifications/resources/list_changed", _with_meta(None, meta))

    def send_resource_updated(self, uri: str, *, meta: dict[str, Any] | None = None) -> None:
        self.notify("notifications/resources/updated", _with_meta({"uri": str(uri)}, meta))
