"""What the server knows about one client: its era, its declarations, and (legacy) its session.

A legacy connection opens with ``initialize`` and lives as a ``Connection`` until it is deleted,
expires or its transport ends; it owns the table of server-to-client requests awaiting answers and
the standalone channel (the HTTP GET stream, or the stdio/in-memory connection itself).

A 2026-07-28 request carries everything in its own ``_meta``; it gets a short-lived
``Connection`` of its own that can send nothing unprompted, so handlers see one interface.
A handler sees either through a ``ServerSession`` bound to its request (the official API).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, get_args

from pydantic import BaseModel, ValidationError

from minimcp import jsonrpc
from minimcp.server.core.outbox import EventLog, Outbox
from minimcp.server.core.pending import PendingRequests, send_request, take_answer
from minimcp.server.core.era import LEGACY, Era, era_of_version
from minimcp.server.core.shares import session_principal
from minimcp.server.core.workers import Lock, monotonic
from minimcp.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitResult,
    EmptyResult,
    InitializeRequestParams,
    LATEST_HANDSHAKE_VERSION,
    ListRootsResult,
    Implementation,
    LoggingLevel,
    RequestId,
    dump,
)

if TYPE_CHECKING:
    from minimcp.jsonrpc import Message
    from minimcp.server.core.server import Server

logger = logging.getLogger("minimcp.server.session")

#: How long a finished response stream stays resumable, and how many streams a session keeps.
STREAM_TTL = 300.0
MAX_STREAMS = 64
#: The shortest pause between two sweeps of a session's expired streams.
STREAM_SWEEP = 1.0

#: The protocol log levels, least severe first (the order ``logging/setLevel`` thresholds follow).
LOG_LEVELS: tuple[str, ...] = get_args(LoggingLevel)


#: ``Connection.lifespan_state`` when no driver gave one: the server's own lifespan is used.
_SERVER_LIFESPAN: Any = object()

#: The result of each server-to-client request, for ``Connection.send_request``.
_RESULT_FOR: dict[str, type[BaseModel]] = {
    "sampling/createMessage": CreateMessageResult,
    "elicitation/create": ElicitResult,
    "roots/list": ListRootsResult,
    "ping": EmptyResult,
}


class Elsewhere(Protocol):
    """A session's way to the other processes that serve it (``lowlevel/shared_sessions.py``)."""

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


#: What hears a client's progress on a question the server asked: (progress, total, message).
QuestionProgress = Callable[[float, "float | None", "str | None"], None]
#: How the ``progressToken`` of a question of this server's begins: other tokens are not looked up,
#: nor relayed to the other processes of a shared session.
_QUESTION_TOKEN = "question-"


def _with_meta(params: dict[str, Any] | None, meta: dict[str, Any] | None) -> dict[str, Any] | None:
    return {**(params or {}), "_meta": meta} if meta else params


def _checked_timeout(timeout: Any, name: str) -> float | None:
    """One request's wait in place of the server's ``back_channel_timeout`` (``None``: that one)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def _covers(declared: Any, required: Any) -> bool:
    """Whether a declared capability object includes everything ``required`` names."""
    if not isinstance(required, dict):
        return declared is not None
    if not isinstance(declared, dict):
        return False
    return all(key in declared and _covers(declared[key], value) for key, value in required.items())


class Connection:
    """The server's side of one connection (legacy) or of one self-contained request (2026-07-28).

    It holds what outlives a request: the client's declarations, the calls in flight, the
    questions awaiting answers, the standalone channel. Handlers never see it directly; they get a
    ``ServerSession`` bound to their request.
    """

    def __init__(
        self,
        server: Server | None = None,
        *,
        protocol_version: str,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        era: Era | None = None,
        log_level: LoggingLevel | None = None,
    ) -> None:
        self._server = server
        self.id: str | None = None
        self.era = era or era_of_version(protocol_version)
        self.protocol_version = protocol_version
        # What the client declared: models, or (``declare``) a 2026-07-28 envelope's raw values
        # already known to be valid, made models on first read (under _lock).
        self._client_capabilities = client_capabilities
        self._client_info = client_info
        self._declared: tuple[Any, Any] | None = None
        self.log_level = log_level
        self.initialized = False
        self.pending = PendingRequests()
        #: When the client's idle clock last started: it sent something, or was asked something.
        #: A plain float, written without a lock: storing one is atomic.
        self.last_seen = monotonic()
        # _lock guards standalone, _inflight, subscriptions, _streams, _streams_swept, _declared and _progress.
        self._lock = Lock()
        # progressToken -> the callback of a question this server asked with one.
        self._progress: dict[str, QuestionProgress] = {}
        self.standalone: Outbox | None = None
        self._inflight: dict[RequestId, Outbox] = {}
        self._streams: OrderedDict[str, EventLog] = OrderedDict()
        self._streams_swept = 0.0
        self.subscriptions: set[str] = set()
        self.closed = False
        #: Tell the client the real text of internal failures (an in-memory client that asked to see them).
        self.expose_errors = False
        #: The authenticated user that opened this legacy session over HTTP; only they may use its id.
        self.principal: str | None = None
        #: Whom this connection's questions count against (``lowlevel/shares.py``): set when the HTTP
        #: edge keeps it among other clients' sessions; ``None`` on a one-client transport.
        self.share_principal: str | None = None
        #: The other processes serving this legacy session (a shared backend,
        #: ``lowlevel/shared_sessions.py``): where an answer, a cancel or a notification goes that
        #: nothing in this process takes. ``None``: the session lives in this process only.
        self.elsewhere: Elsewhere | None = None
        #: Per-connection scratch state of the application's, kept across its requests.
        self.state: dict[str, Any] = {}
        #: Cleanups pushed by handlers or middleware, run (last first) when the connection ends.
        self.exit_stack = contextlib.ExitStack()
        #: What handlers see as ``ctx.lifespan_context`` when a driver (``serve_one``,
        #: ``serve_connection``) was given the lifespan's state; else the server's own.
        self.lifespan_state: Any = _SERVER_LIFESPAN

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

    def serving(self, server: Server, lifespan_state: Any = None) -> Connection:
        """This connection as one of ``server``'s, its handlers seeing ``lifespan_state``: what a
        driver does with a connection built by hand."""
        if self._server is not None and self._server is not server:
            raise ValueError("this Connection is already served by another server; build one per server")
        self._server = server
        self.lifespan_state = lifespan_state
        return self

    def lifespan_context(self) -> Any:
        """What this connection's handlers see as ``ctx.lifespan_context``."""
        if self.lifespan_state is _SERVER_LIFESPAN:
            return self._server.lifespan_context()  # type: ignore[union-attr]
        return self.lifespan_state

    @property
    def session_id(self) -> str | None:
        """The legacy session's ``Mcp-Session-Id``; ``None`` on stdio, in memory and on 2026-07-28."""
        return self.id

    # --- what the client declared ------------------------------------------------------------
    def declare(self, capabilities: Any, info: Any) -> None:
        """Take a 2026-07-28 envelope's ``clientCapabilities`` and ``clientInfo`` (ignored unless an
        object) as the client's declarations, raw: the caller has proven that they validate (an
        identical pair already did), and most handlers never read them, so each becomes this
        connection's own model only when first read."""
        self._declared = (capabilities, info)

    def _settle(self) -> None:
        """Make the declared raw values models (or give the empty capabilities when nothing was declared)."""
        with self._lock:
            if self._declared is not None:
                capabilities, info = self._declared
                self._client_capabilities = ClientCapabilities.model_validate(capabilities)
                self._client_info = Implementation.model_validate(info) if isinstance(info, dict) else None
                self._declared = None
            elif self._client_capabilities is None:
                self._client_capabilities = ClientCapabilities()

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client said it can do (nothing, until it said)."""
        if self._declared is not None or self._client_capabilities is None:
            self._settle()
        return self._client_capabilities  # type: ignore[return-value]

    @client_capabilities.setter
    def client_capabilities(self, capabilities: ClientCapabilities) -> None:
        if self._declared is not None:
            self._settle()
        self._client_capabilities = capabilities

    @property
    def client_info(self) -> Implementation | None:
        """Who the client said it is; ``None`` until it named itself."""
        if self._declared is not None:
            self._settle()
        return self._client_info

    @client_info.setter
    def client_info(self, info: Implementation | None) -> None:
        if self._declared is not None:
            self._settle()
        self._client_info = info

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
        return _covers(self._wire_capabilities(), dump(capability))

    check_capability = check_client_capability

    def declares(self, required: dict[str, Any]) -> bool:
        """``check_client_capability`` for a wire-shaped capability object."""
        return _covers(self._wire_capabilities(), required)

    def capability(self, name: str) -> Any:
        """One capability the client declared, in wire form (``None``: not declared)."""
        return self._wire_capabilities().get(name)

    def _wire_capabilities(self) -> dict[str, Any]:
        """The client's capabilities in wire form: a 2026-07-28 envelope's raw declaration while it
        is one (proven valid, and asked about by a question's gate far more often than made a model),
        else the model's."""
        declared = self._declared  # read once: another thread may settle it meanwhile
        if declared is not None:
            return declared[0]
        return dump(self.client_capabilities)

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
        with self._lock:
            self._inflight[request_id] = outbox

    def end(self, request_id: RequestId, outbox: Outbox) -> None:
        """Forget the call ``request_id`` while ``outbox`` is still its outbox: a client may reuse an
        id once its call was cancelled, before the old call's worker has wound down."""
        self.last_seen = monotonic()
        with self._lock:
            if self._inflight.get(request_id) is outbox:
                del self._inflight[request_id]

    @property
    def working(self) -> bool:
        """Whether some call of this session runs server code rather than waiting on the client:
        a worker that computes keeps its session alive, one blocked on an unanswered question does not."""
        return len(self._inflight) > len(self.pending)

    @property
    def open_here(self) -> bool:
        """Whether a call or the standalone stream of this connection is open in this process."""
        with self._lock:
            return bool(self._inflight) or self.standalone is not None

    def attach_standalone(self, outbox: Outbox) -> bool:
        """Make ``outbox`` this connection's standalone channel, unless one is already open.

        From then on it hears the resource updates it subscribed to (``ctx.notify_resource_updated``)
        and the server's own announcements (``MCPServer.enable``/``disable``).
        """
        with self._lock:
            if self.standalone is not None:
                return False
            self.standalone = outbox
        self._server.dispatcher.listens.attach(self)  # type: ignore[union-attr]  # only a served connection streams
        return True

    def detach_standalone(self, outbox: Outbox) -> None:
        """Forget ``outbox`` as the standalone channel, if it still is the one."""
        with self._lock:
            if self.standalone is not outbox:
                return
            self.standalone = None
        self._server.dispatcher.listens.detach(self)  # type: ignore[union-attr]  # only a served connection streams

    def progress_heard(self, params: Any, *, here_only: bool = False) -> None:
        """A client's ``notifications/progress`` on one of this server's questions: to the callback
        that asked, here or (unless ``here_only``) on the process that asked. A failing callback is
        logged; the notification has no one to answer."""
        if not isinstance(params, dict):
            return
        token, progress = params.get("progressToken"), params.get("progress")
        if not (isinstance(token, str) and token.startswith(_QUESTION_TOKEN)) \
                or isinstance(progress, bool) or not isinstance(progress, (int, float)):
            return  # not about a question of this server's: nothing to hear, nothing to relay
        with self._lock:
            callback = self._progress.get(token)
        if callback is None:
            if self.elsewhere is not None and not here_only:
                self.elsewhere.tell("progress", {"params": params})
            return
        total, message = params.get("total"), params.get("message")
        try:
            callback(progress, total if isinstance(total, (int, float)) else None,
                     message if isinstance(message, str) else None)
        except Exception:
            logger.exception("the progress callback of a question failed")

    def close_standalone_stream(self, *, here_only: bool = False) -> None:
        """End the standalone GET stream now, in this process or (unless ``here_only``) the one
        holding it: the official ``close_standalone_sse_stream``. The client may open another; what
        is sent meanwhile is dropped, as this stream keeps no log."""
        with self._lock:
            standalone = self.standalone
        if standalone is not None:
            standalone.abort()
        elif self.elsewhere is not None and not here_only:
            self.elsewhere.tell("close_standalone", {})

    # --- resumable response streams (legacy SSE, ``Last-Event-ID``) ----------------------------
    def retain_stream(self, log: EventLog) -> None:
        """Keep ``log`` so a client that lost its connection can resume it by event id.

        Bounded: a finished stream is kept for ``STREAM_TTL`` seconds (forgotten by the first keep
        that sweeps after that; a keep sweeps when ``STREAM_SWEEP`` seconds have passed since the
        last sweep, so a busy session does not scan every kept stream on every call), and beyond
        ``MAX_STREAMS`` the oldest streams (finished ones first) are forgotten.
        """
        now = monotonic()
        with self._lock:
            if now >= self._streams_swept + STREAM_SWEEP:
                self._streams_swept = now
                for stream_id, kept in list(self._streams.items()):
                    if kept.finished_at is not None and now - kept.finished_at > STREAM_TTL:
                        del self._streams[stream_id]
            self._streams[log.stream_id] = log
            while len(self._streams) > MAX_STREAMS:
                oldest = next(iter(self._streams))
                if self._streams[oldest].finished_at is None:  # else it is the oldest finished one already
                    oldest = next((sid for sid, kept in self._streams.items() if kept.finished_at is not None), oldest)
                del self._streams[oldest]

    def stream(self, stream_id: str) -> EventLog | None:
        with self._lock:
            return self._streams.get(stream_id)

    def close(self) -> None:
        """End the session: every worker waiting on this client wakes with "Connection closed", then
        the cleanups on ``exit_stack`` run (one that fails is logged)."""
        self.closed = True
        self.pending.close(jsonrpc.connection_closed())
        if self._server is not None:
            self._server.dispatcher.listens.detach(self)
        with self._lock:
            outboxes = [*self._inflight.values(), *([self.standalone] if self.standalone else [])]
        for outbox in outboxes:
            outbox.abort()
        try:
            self.exit_stack.close()
        except Exception:
            logger.exception("a cleanup on the connection's exit_stack failed")

    # --- sending -------------------------------------------------------------------------------
    def channel(self, related_request_id: RequestId | None) -> Outbox | None:
        with self._lock:
            if related_request_id is not None:
                return self._inflight.get(related_request_id)
            return self.standalone

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
        if on_progress is not None:
            token = f"{_QUESTION_TOKEN}{secrets.token_hex(8)}"
            params = {**params, "_meta": {**(params.get("_meta") or {}), "progressToken": token}}
            with self._lock:
                self._progress[token] = on_progress
        try:
            return send_request(self.pending, channel, method, params,
                                self._server.back_channel_timeout if timeout is None else timeout)
        finally:
            shares.give_back(self.share_principal)
            if on_progress is not None:
                with self._lock:
                    self._progress.pop(token, None)

    # --- the official ``Connection``'s standalone-stream API --------------------------------------
    def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                         opts: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Ask on the standalone channel; ``NoBackChannelError`` where there is none (2026-07-28).
        ``opts``, the official ``CallOptions``: its ``timeout`` bounds this request's wait; its other
        keys (progress, resumption, a caller's own id) mean nothing to a server's channel."""
        timeout = _checked_timeout((opts or {}).get("timeout"), "opts['timeout']")
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


class ServerSession:
    """The session as one request's handler sees it: the official ``ServerSession`` API, synchronous.

    ``related_request_id`` picks the channel as in the official SDK: present, the message rides
    that request's stream; absent, the connection's standalone channel. Progress goes to this
    request's caller. Everything the connection knows is read through.
    """

    def __init__(self, connection: Connection, outbox: Outbox | None = None, request_id: RequestId | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.connection = connection
        self._outbox = outbox
        self._request_id = request_id
        self._meta = meta

    # --- what the connection knows ---------------------------------------------------------------
    @property
    def legacy(self) -> bool:
        return self.connection.era.legacy

    @property
    def protocol_version(self) -> str:
        return self.connection.protocol_version

    @property
    def client_capabilities(self) -> ClientCapabilities:
        return self.connection.client_capabilities

    @property
    def client_info(self) -> Implementation | None:
        return self.connection.client_info

    @property
    def client_params(self) -> InitializeRequestParams | None:
        return self.connection.client_params

    @property
    def can_send_request(self) -> bool:
        return self.connection.can_send_request and (self._outbox is None or self._outbox.can_request)

    def check_client_capability(self, capability: ClientCapabilities) -> bool:
        return self.connection.check_client_capability(capability)

    # --- notifications ---------------------------------------------------------------------------
    def _own(self, related_request_id: RequestId | None) -> bool:
        # ``ctx.request_id`` is the id as text, as officially: it names this request whatever its JSON type.
        return related_request_id is not None and str(related_request_id) == str(self._request_id)

    def _ask(self, method: str, params: dict[str, Any], related_request_id: RequestId | None,
             timeout: float | None = None, on_progress: QuestionProgress | None = None) -> dict[str, Any]:
        """Ask on the channel ``related_request_id`` names; this request's own id may come as text."""
        related = self._request_id if self._own(related_request_id) else related_request_id
        return self.connection.ask(method, params, related, timeout, on_progress)

    def _route(self, method: str, params: dict[str, Any] | None, related_request_id: RequestId | None) -> None:
        if self._own(related_request_id) and self._outbox is not None:
            self._outbox.send(jsonrpc.notification(method, params))
        else:
            self.connection.notify(method, params, related_request_id=related_request_id)

    def send_notification(self, notification: BaseModel | str, related_request_id: RequestId | None = None,
                          params: dict[str, Any] | None = None) -> None:
        """Send a notification model (or a method name and ``params``) to the client."""
        if isinstance(notification, BaseModel):
            wire = dump(notification)
            self._route(wire["method"], wire.get("params"), related_request_id)
        else:
            self._route(notification, params, related_request_id)

    def send_log_message(self, level: LoggingLevel, data: Any, logger: str | None = None,
                         related_request_id: RequestId | None = None) -> None:
        """Protocol logging; on 2026-07-28 only what the request opted in to, on its own stream."""
        if not self.connection.log_enabled(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._route("notifications/message", params, self.connection.era.log_stream(related_request_id, self._request_id))

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Progress for the caller's token; a no-op when the request carried none."""
        token = (self._meta or {}).get("progressToken")
        if token is not None:
            self.send_progress_notification(token, progress, total, message, self._request_id)

    def send_progress_notification(self, progress_token: str | int, progress: float, total: float | None = None,
                                   message: str | None = None, related_request_id: RequestId | None = None) -> None:
        params: dict[str, Any] = {"progressToken": progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._route("notifications/progress", params, related_request_id)

    def send_elicit_complete(self, elicitation_id: str, related_request_id: RequestId | None = None) -> None:
        self.connection.era.send_elicit_complete(self, elicitation_id, related_request_id)

    def send_tool_list_changed(self) -> None:
        self._route("notifications/tools/list_changed", None, None)

    def send_resource_list_changed(self) -> None:
        self._route("notifications/resources/list_changed", None, None)

    def send_prompt_list_changed(self) -> None:
        self._route("notifications/prompts/list_changed", None, None)

    def send_resource_updated(self, uri: Any) -> None:
        self._route("notifications/resources/updated", {"uri": str(uri)}, None)

    # --- questions (legacy connections) ----------------------------------------------------------
    def send_request(self, request: BaseModel | str, result_type: Any = None,
                     request_read_timeout_seconds: float | None = None, metadata: Any = None,
                     progress_callback: QuestionProgress | None = None, *,
                     related_request_id: RequestId | None = None) -> Any:
        """Ask the client and wait, ``request_read_timeout_seconds`` at most when given (else the
        server's ``back_channel_timeout``); ``progress_callback`` hears the progress the client
        reports while it works on the answer (a legacy client's ``send_progress_notification``).

        ``send_request(request_model, ResultType)`` returns the validated result, as the official
        SDK does; ``send_request("roots/list", params)`` returns the raw result object.
        """
        related = getattr(metadata, "related_request_id", None) if metadata is not None else related_request_id
        timeout = _checked_timeout(request_read_timeout_seconds, "request_read_timeout_seconds")
        if isinstance(request, BaseModel):
            wire = dump(request)
            method, params, model = wire["method"], wire.get("params") or {}, result_type
        else:
            method, params, model = request, result_type or {}, None
        result = self._ask(method, params, related, timeout, progress_callback)
        return result if model is None else model.model_validate(result)

    def elicit(self, message: str, requested_schema: dict[str, Any],
               related_request_id: RequestId | None = None) -> ElicitResult:
        return self.elicit_form(message, requested_schema, related_request_id)

    def elicit_form(self, message: str, requested_schema: dict[str, Any],
                    related_request_id: RequestId | None = None) -> ElicitResult:
        params = {"mode": "form", "message": message, "requestedSchema": requested_schema}
        return ElicitResult.model_validate(self._ask("elicitation/create", params, related_request_id))

    def elicit_url(self, message: str, url: str, elicitation_id: str,
                   related_request_id: RequestId | None = None) -> ElicitResult:
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return ElicitResult.model_validate(self._ask("elicitation/create", params, related_request_id))

    def create_message(self, messages: list[Any], *, max_tokens: int, related_request_id: RequestId | None = None,
                       **options: Any) -> CreateMessageResult | CreateMessageResultWithTools:
        """Legacy-only sampling from the body (deprecated; a resolver returning ``Sample`` works in both eras)."""
        params = dump(CreateMessageRequestParams(messages=messages, max_tokens=max_tokens, **options))
        result = self._ask("sampling/createMessage", params, related_request_id)
        model = CreateMessageResultWithTools if isinstance(result.get("content"), list) else CreateMessageResult
        return model.model_validate(result)

    def list_roots(self, related_request_id: RequestId | None = None) -> ListRootsResult:
        """Legacy-only roots from the body (deprecated; a resolver returning ``ListRoots`` works in both eras)."""
        return ListRootsResult.model_validate(self._ask("roots/list", {}, related_request_id))

    def send_ping(self) -> EmptyResult:
        return EmptyResult.model_validate(self._ask("ping", {}, None))


#: The bytes of a session manager's ``instance`` tag, and the digits an id is written in.
_TAG_BYTES = 4
_HEX = frozenset("0123456789abcdef")


class SessionManager:
    """Legacy sessions by ``Mcp-Session-Id``; idle ones expire on a sweep, no timer thread.

    The expiry rule: a session expires when ``idle_timeout`` seconds have passed since its client
    last sent something or was last asked something, and none of its calls is running server code
    (time the server spends computing never counts against the client). A call blocked on a
    question the client never answers does not keep the session alive: expiry closes it, and its
    worker wakes with "Connection closed". Sweeps run when a session is added or looked up and on
    the keepalive tick of every open response stream (``sweep``), at most every ``SWEEP_INTERVAL``
    seconds. ``idle_timeout`` may be changed on a running app; the next sweep uses the new value.
    ``max_pending_per_session`` caps the server-to-client requests one session may have outstanding.

    A session id is 128 random bits and the ``instance`` tag of the manager that minted it
    (``<32 hex>-<8 hex>``): the tag is no secret and grants nothing, but it lets a process that
    does not know an id tell a session it forgot (its own tag) from one another process (or this
    server before a restart) minted (``minted_elsewhere``), which no process here can serve
    without a shared backend or sticky routing.
    """

    #: The longest pause between two sweeps; shorter when ``idle_timeout`` is short.
    SWEEP_INTERVAL = 5.0

    def __init__(self, idle_timeout: float, max_sessions: int, max_pending_per_session: int) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.max_pending_per_session = max_pending_per_session
        # _lock guards _sessions and _last_sweep.
        self._lock = Lock()
        self._sessions: dict[str, Connection] = {}
        self._last_sweep = 0.0
        #: What this manager's session ids end with (see the class text).
        self.instance = secrets.token_hex(_TAG_BYTES)

    def add(self, connection: Connection) -> str | None:
        """Register ``connection`` under a fresh id (128 random bits, tagged with ``instance``);
        ``None`` when the server is full."""
        self.sweep(force=len(self._sessions) >= self.max_sessions)
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                return None
            connection.id = f"{secrets.token_hex(16)}-{self.instance}"
            connection.pending.limit = self.max_pending_per_session
            connection.share_principal = session_principal(connection)
            self._sessions[connection.id] = connection
        return connection.id

    def get(self, session_id: str) -> Connection | None:
        """The live session with this id, renewed: a lookup means its client just sent something."""
        self.sweep()
        with self._lock:
            session = self._sessions.get(session_id)
        if session is not None and self._idle(session):
            self.remove(session_id)
            return None
        if session is not None:
            session.last_seen = monotonic()
        return session

    def minted_elsewhere(self, session_id: str) -> bool:
        """Whether ``session_id``, which this manager does not know, has the shape of an id another
        manager minted (another process, or this server before a restart), rather than one of its
        own that expired or was ended."""
        random, _, tag = session_id.rpartition("-")
        return (tag != self.instance and len(random) == 32 and len(tag) == 2 * _TAG_BYTES
                and all(c in _HEX for c in random + tag))

    def sweep(self, force: bool = False) -> None:
        """Expire every idle session; without ``force``, only if the last sweep is old enough."""
        now = monotonic()
        with self._lock:
            # Spaced by the idle timeout as it is now, so shortening it on a running app takes effect
            # at the next tick instead of after a pause computed from the old value.
            if not force and now < self._last_sweep + min(self.SWEEP_INTERVAL, self.idle_timeout / 4):
                return
            self._last_sweep = now
            expired = [sid for sid, s in self._sessions.items() if self._idle(s)]
        for session_id in expired:
            self.remove(session_id)

    def event_log(self, connection: Connection, can_request: bool, request_id: RequestId) -> EventLog:
        """The log a resumable SSE answer (to ``request_id``) of ``connection`` is drained from."""
        return EventLog(None, can_request)

    def remote_stream(self, connection: Connection, stream_id: str) -> Any:
        """A stream of ``connection`` that another process sends (``SharedSessionManager``): none here,
        where every stream is in this process."""
        return None

    def save(self, connection: Connection) -> None:
        """Keep what a request changed in ``connection``: here the connection itself is the record
        (``SharedSessionManager`` stores it in a shared backend)."""

    def remove(self, session_id: str) -> bool:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    def __len__(self) -> int:
        return len(self._sessions)

    def _idle(self, connection: Connection) -> bool:
        # The clock first: a session looked up on every call is seldom idle that long.
        return monotonic() - connection.last_seen > self.idle_timeout and not connection.working
