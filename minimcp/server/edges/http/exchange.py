"""Streamable HTTP without I/O: one ``HTTPRequest`` in, one ``HTTPResponse`` out.

This module decides what only HTTP has (Host/Origin, body size, Content-Type, Accept, the session
header, a tool's scopes and ``Mcp-Param-*`` headers), asks the dispatcher which era a message
belongs to and the era how HTTP treats it, and answers in one of two shapes:

- a JSON body, when the answer is ready before anything else must be said (the common case: an
  echo tool never opens a stream);
- an SSE stream, as soon as a notification or a server-to-client request precedes the answer, or
  the call runs past a keepalive interval. The stream drains the request's outbox and writes a
  comment every ``keepalive_interval`` seconds, which is how a vanished client is noticed: the
  write fails, the adapter closes the body iterator, and the outbox is aborted so every wait of
  that call ends with "Connection closed".

Legacy sessions (``Mcp-Session-Id``) hold server-to-client requests; their answers arrive as
later POSTs and are routed by id; a legacy call of a tool that can send nothing before its
answer (``Plan.silent``) runs on the thread that received it. A 2026-07-28
request is self-contained and never carries a server-to-client request; it runs on the thread
that received it when it asked for no progress and no log messages (``Dispatcher.quiet``), so it
answers JSON however long it runs. Its client cancels it by hanging up, which such a call, writing
nothing, would never notice: where the adapter can watch the connection
(``HTTPRequest.watch_hangup``), a hang-up aborts the outbox while the request runs.

Resumability (``Era.resumable``: legacy sessions at 2025-11-25 or later): an SSE answer is drained
from an ``EventLog`` rather than a queue, opens with a priming event (an id, ``retry:``, empty
data) and numbers every event ``<stream id>:<seq>``. When a handler calls
``ctx.close_sse_stream()`` the response ends with another id-only event and the request keeps
running; the client reconnects with GET and ``Last-Event-ID`` and gets everything after that id
from the log. A 2026-07-28 stream has no ids: a broken one is simply re-issued, and
``subscriptions/listen`` streams stay open until the client leaves.

What an adapter does: build an ``HTTPRequest`` (the caller already identified: ``principal`` and,
behind a bearer check, ``access_token``), call ``Exchange.handle`` (or ``guard``, its own
authentication, then ``serve``), write the ``HTTPResponse``, and close its body when the client
goes away. Every status comes from ``errors``.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from typing_extensions import Unpack

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.auth.middleware.auth_context import auth_context_var
from minimcp.server.auth.middleware.bearer_auth import scope_challenge
from minimcp.server.core.faults import BackendFault
from minimcp.server.core.ports import SessionStore
from minimcp.server.core.outbox import EventLog, LogEntry, QueueOutbox
from minimcp.server.core.dispatch import UNTRACKED, Dispatcher
from minimcp.server.core.options import gather, keyword_names, refuse_unknown
from minimcp.server.core.session_manager import SessionManager
from minimcp.server.core.sessions import Connection
from minimcp.server.core.shared_sessions import RemoteLog, SharedSessionManager
from minimcp.server.edges.http import errors, sse
from minimcp.server.edges.http.events import StoredEventLog, replay
from minimcp.server.edges.http.options import ExchangeKeywords, HTTPOptions
from minimcp.server.edges.http.param_headers import check_param_headers
from minimcp.server.edges.http.security import TransportSecuritySettings
from minimcp.shared.inbound import MCP_METHOD_HEADER, MCP_NAME_HEADER, MCP_PROTOCOL_VERSION_HEADER
from minimcp.shared.transport_context import TransportContext

if TYPE_CHECKING:
    from minimcp.server.auth.middleware.bearer_auth import AuthChallenge
    from minimcp.server.auth.provider import AccessToken
    from minimcp.server.auth.resource_server import ProtectedResource
    from minimcp.server.core.era import Era
    from minimcp.server.core.plan import Plan
    from minimcp.server.core.dispatch import ServedServer

#: The endpoint's warnings are logged under the WSGI adapter's name, which deployments filter on.
logger = logging.getLogger("minimcp.server.wsgi")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "Mcp-Protocol-Version"


class Head(NamedTuple):
    """The header fields the exchange itself reads of every request, read once where the request
    was made (a WSGI environ's in one pass, ``EnvironHeaders.head``) and handed down with it."""

    host: str | None
    origin: str | None
    content_type: str | None
    content_length: str | None
    accept: str | None
    version: str | None
    session_id: str | None
    mcp_method: str | None
    mcp_name: str | None

    @classmethod
    def of(cls, headers: Mapping[str, str]) -> Head:
        """The head of a request whose adapter gave only its ``headers``."""
        return cls(*map(headers.get, HEAD_FIELDS))

    def routing(self) -> dict[str, str]:
        """The routing headers a 2026-07-28 request is checked against (``classify_inbound_request``)."""
        fields = {MCP_PROTOCOL_VERSION_HEADER: self.version, MCP_METHOD_HEADER: self.mcp_method,
                  MCP_NAME_HEADER: self.mcp_name}
        return {name: value for name, value in fields.items() if value is not None}


#: ``Head``'s fields by header name, in its order.
HEAD_FIELDS = ("Host", "Origin", "Content-Type", "Content-Length", "Accept", VERSION_HEADER, SESSION_HEADER,
               "Mcp-Method", "Mcp-Name")


@dataclass(slots=True)
class HTTPRequest:
    """One HTTP request to the endpoint, as an adapter read it.

    ``principal`` is who is calling (``None``: nobody; it binds legacy sessions and sealed
    ``requestState``); ``access_token`` the verified bearer token, when the adapter checked one;
    ``client_address`` the peer. ``holds_streams``: whether the server has a thread to spare for a
    stream held open (not so on one thread per process, where the client's next POST would hang);
    ``multiprocess``: whether other processes serve the same endpoint. ``native`` builds the
    adapter's own request object on first use, for ``ctx.request``. ``body`` is the bytes, or a
    reader given the size limit that returns ``None`` past it, so that a body is read only once
    the headers have passed. ``watch_hangup``, where the adapter can see the client's connection,
    watches it: given a function, it calls it once if the client hangs up, until the function it
    returned (the unwatch) is called.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes | Callable[[int], bytes | None] = b""
    principal: str | None = None
    access_token: AccessToken | None = None
    client_address: str | None = None
    holds_streams: bool = True
    multiprocess: bool = False
    native: Callable[[], Any] | None = None
    watch_hangup: Callable[[Callable[[], None]], Callable[[], None]] | None = None
    #: The fields the exchange reads (``Head``): given by an adapter that reads them faster than
    #: ``headers`` would, else read from ``headers`` when the exchange takes the request.
    head: Head = None  # type: ignore[assignment]

    def read(self, limit: int) -> bytes | None:
        """The body, or ``None`` when it is longer than ``limit``."""
        body = self.body if isinstance(self.body, bytes) else self.body(limit)
        return None if body is None or len(body) > limit else body


@dataclass(slots=True)
class HTTPResponse:
    """One answer: write ``status`` and ``headers``, then every chunk of ``body``; closing ``body``
    early (a client gone) ends the call it streams."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Iterable[bytes] = ()

    def close(self) -> None:
        close = getattr(self.body, "close", None)
        if close is not None:
            close()


def content(body: bytes, status: int, content_type: str, headers: dict[str, str] | None = None) -> HTTPResponse:
    fields = _fields(content_type, headers)
    fields.insert(1, ("Content-Length", str(len(body))))
    return HTTPResponse(status, fields, [body])


def json_response(message: Message, status: int = errors.OK, headers: dict[str, str] | None = None) -> HTTPResponse:
    """``content`` of ``message`` as JSON; encoded last, so that an answer's road ends in the codec."""
    fields = _fields("application/json", headers)
    body = jsonrpc.encode(message)
    fields.insert(1, ("Content-Length", str(len(body))))
    return HTTPResponse(status, fields, [body])


def _fields(content_type: str, headers: dict[str, str] | None) -> list[tuple[str, str]]:
    """A response's header fields but its ``Content-Length``, which goes second once the body is known."""
    return [("Content-Type", content_type), *headers.items()] if headers else [("Content-Type", content_type)]


def plain_response(text: str, status: int, headers: dict[str, str] | None = None) -> HTTPResponse:
    return content(text.encode(), status, "text/plain; charset=utf-8", headers)


def refusal_response(refused: errors.EnvelopeError | errors.PlainError, request_id: Any = None) -> HTTPResponse:
    """The answer to a named refusal: its JSON-RPC error (answering ``request_id`` unless the
    refusal names its own) or its text, with its status and headers."""
    if isinstance(refused, errors.PlainError):
        return plain_response(refused.text, refused.status, refused.headers)
    if isinstance(refused, errors.Unparsable):
        return json_response(refused.reply, refused.status)
    answered = refused.request_id if refused.request_id is not None else request_id
    return json_response(jsonrpc.error_from(answered, refused), refused.status, refused.headers)


def challenge_response(refused: AuthChallenge, auth: ProtectedResource | None) -> HTTPResponse:
    """A bearer check's refusal (401, or 403 for a missing scope), with its ``WWW-Authenticate``."""
    www_authenticate = refused.www_authenticate(auth.resource_metadata_url if auth is not None else None)
    return content(refused.body(), refused.status, "application/json", {"WWW-Authenticate": www_authenticate})


def _empty(status: int) -> HTTPResponse:
    return HTTPResponse(status, [("Content-Length", "0")], [])


def _events(body: Iterator[bytes], headers: dict[str, str]) -> HTTPResponse:
    return HTTPResponse(errors.OK, [*sse.SSE_HEADERS, *headers.items()], body)


@functools.lru_cache(maxsize=64)
def _offered(accept: str) -> frozenset[str]:
    """The media types an ``Accept`` value lists; cached, since a client sends the same one on
    every request."""
    return frozenset(part.split(";")[0].strip().lower() for part in accept.split(","))


@functools.lru_cache(maxsize=64)
def _media_type(content_type: str) -> str:
    """A ``Content-Type`` value without its parameters, in lower case; cached as ``_offered`` is."""
    return content_type.split(";")[0].strip().lower()


def _accepts(head: Head, *types: str) -> bool:
    offered = _offered(head.accept or "")
    return "*/*" in offered or offered.issuperset(types)


def _content_length(head: Head) -> int | None:
    value = head.content_length or ""
    return int(value) if value.isdigit() else None


def _version_header(head: Head) -> str | None:
    return head.version.strip(" \t") if head.version is not None else None


class Exchange:
    """The Streamable HTTP endpoint of one low-level ``Server``, without I/O.

    ``http`` is what it serves and how much it may hold (``HTTPOptions``, shared with the adapter
    that built it), or each of its fields as a keyword; ``auth`` is the protected resource whose
    scopes a tool call is checked against, and whose metadata a refusal points to.
    """

    def __init__(
        self,
        server: ServedServer,
        *,
        http: HTTPOptions | None = None,
        auth: ProtectedResource | None = None,
        **options: Unpack[ExchangeKeywords],
    ) -> None:
        keywords: dict[str, Any] = dict(options)
        self.http = http = gather("Exchange", "http", http, HTTPOptions, keywords)
        refuse_unknown("Exchange", keywords, keyword_names(ExchangeKeywords) | {"http", "auth"})
        self.server = server
        self.dispatcher: Dispatcher = server.dispatcher
        # The options each request reads, as attributes of their own: one lookup on the hot path.
        self.path = "/" + http.path.strip("/")
        self.json_response = http.json_response
        self.stateless_http = http.stateless_http
        self.max_request_body_size = http.max_request_body_size
        self.security = http.transport_security or TransportSecuritySettings()
        # A backend that says it is ``shared`` keeps the sessions as a ``SharedBackend`` does.
        self.sessions: SessionManager = (
            SharedSessionManager(cast(SessionStore, server.backend), self.dispatcher, http.session_idle_timeout,
                                 http.max_sessions, http.max_pending_per_session) if server.backend.shared
            else SessionManager(http.session_idle_timeout, http.max_sessions, http.max_pending_per_session))
        self.keepalive_interval = http.keepalive_interval
        self.retry_interval = http.retry_interval
        self.event_store = http.event_store
        self.auth = auth
        #: Whether the per-process-keys warning was logged (once per exchange; a plain bool, a racy
        #: second warning is harmless).
        self._warned_keys = False

    def close(self) -> None:
        self.sessions.close()

    # --- entering ------------------------------------------------------------------------------
    def handle(self, request: HTTPRequest) -> HTTPResponse:
        """The whole exchange, for an adapter that identified the caller itself."""
        if request.head is None:
            request.head = Head.of(request.headers)
        return self.guard(request.head) or self.serve(request)

    def guard(self, head: Head) -> HTTPResponse | None:
        """The refusal of a request whose ``Host`` or ``Origin`` ``transport_security`` does not allow
        (DNS-rebinding protection), else ``None``; custom routes are guarded by it too."""
        refused = self.security.refusal(head.host, head.origin)
        return None if refused is None else self.refuse(refused, head)

    def refuse(self, refused: str, head: Head) -> HTTPResponse:
        """The answer to a request whose ``refused`` field (``TransportSecuritySettings.refusal``:
        ``"Host"`` or ``"Origin"``) is not allowed."""
        logger.warning("rejected request with %s %r", refused, head.host if refused == "Host" else head.origin)
        return refusal_response(errors.InvalidHost() if refused == "Host" else errors.InvalidOrigin())

    def serve(self, request: HTTPRequest) -> HTTPResponse:
        """Answer a guarded request; its verified token, if any, is the current one while it is
        dispatched (a call's worker runs in a copy of this thread's context, so the tool sees it too)."""
        if request.head is None:
            request.head = Head.of(request.headers)
        if request.access_token is None:
            return self._serve(request)
        current = auth_context_var.set(request.access_token)
        try:
            return self._serve(request)
        finally:
            auth_context_var.reset(current)

    def _serve(self, request: HTTPRequest) -> HTTPResponse:
        try:
            if "/" + request.path.strip("/") != self.path:
                raise errors.NotFound()
            if request.method == "POST":
                return self._post(request)
            if request.method == "GET":
                return self._get(request)
            if request.method == "DELETE":
                return self._delete(request)
            raise errors.MethodNotAllowed("GET, POST, DELETE")
        except (errors.EnvelopeError, errors.PlainError) as refused:  # no request id to answer
            return refusal_response(refused)
        except BackendFault as fault:
            return refusal_response(errors.fault_refusal(fault))

    # --- POST ----------------------------------------------------------------------------------
    def _post(self, request: HTTPRequest) -> HTTPResponse:
        head = request.head
        length = _content_length(head)
        if length is not None and length > self.max_request_body_size:
            raise errors.BodyTooLarge()
        if _media_type(head.content_type or "") != "application/json":
            raise errors.UnsupportedMediaType()
        if not _accepts(head, "application/json", "text/event-stream"):
            raise errors.NotAcceptable("Not Acceptable: Accept must list application/json and text/event-stream")
        version, routing = _version_header(head), head.routing()
        body = request.read(self.max_request_body_size)
        if body is None:
            raise errors.BodyTooLarge()
        try:
            message, kind = jsonrpc.parse(body)
        except jsonrpc.Unreadable as bad:
            raise errors.Unparsable(bad.reply) from None
        if request.multiprocess and not self._warned_keys and self.server.hooks.keys_per_process():
            self._warned_keys = True
            logger.warning(
                "this WSGI server runs several processes, but each seals requestState with keys of its own, so a "
                "2026-07-28 retry landing on another process fails with -32602. Pass backend=\"redis://host:6379/0\" "
                "(keys made once and shared), or RequestStateSecurity(keys=[...]) with the same keys everywhere")
        try:
            arrival = self.dispatcher.receive(message, kind, version, routing)
            plan = arrival.plan
            if plan is not None and plan.required_scopes:
                refused = self._scopes_refusal(request, plan.required_scopes)
                if refused is not None:
                    return refused
            if arrival.connection is None:
                return self._post_in_session(request, message, kind, arrival.era, plan)
            return self._post_self_contained(request, message, kind, arrival.connection, plan)
        except errors.EnvelopeError as refused:
            return refusal_response(refused, jsonrpc.safe_id(message))
        except BackendFault as fault:
            return refusal_response(errors.fault_refusal(fault), jsonrpc.safe_id(message))
        except MCPError as refused:  # the core refused the envelope of a 2026-07-28 request
            return json_response(jsonrpc.error_from(jsonrpc.safe_id(message), refused), errors.http_status(refused.code))

    def _scopes_refusal(self, request: HTTPRequest, needed: tuple[str, ...]) -> HTTPResponse | None:
        """The 403 for a call to a tool whose ``required_scopes`` the caller's token lacks."""
        refused = scope_challenge(self.auth, request.access_token, list(needed))
        return None if refused is None else challenge_response(refused, self.auth)

    def _post_self_contained(self, request: HTTPRequest, message: Message, kind: str, connection: Connection,
                             plan: Plan | None) -> HTTPResponse:
        era = connection.era
        if plan is not None and plan.header_schema is not None:
            check_param_headers(message, request.headers, plan.header_schema)
        if kind == "notification":
            return _empty(errors.ACCEPTED)
        if kind != "request":
            raise errors.BadEnvelope("A 2026-07-28 client sends no responses")
        if self.json_response and self.dispatcher.streams(message):
            raise errors.BadEnvelope(f"{message['method']} answers with an SSE stream; this endpoint answers JSON only")
        transport = self._transport(request, False)
        outbox = QueueOutbox(can_request=False)
        # A 2026-07-28 client cancels by hanging up, and a quiet call writes nothing that would
        # reveal it: the adapter watches the connection until the request ends.
        unwatch = request.watch_hangup(outbox.abort) if request.watch_hangup is not None else None
        try:
            answer = self.dispatcher.handle_request(message, connection, outbox, transport, UNTRACKED, here=True,
                                                    plan=plan)
        except BaseException:
            if unwatch is not None:
                unwatch()
            raise
        if unwatch is not None:
            if answer is None:
                outbox.on_end(unwatch)  # a worker's call, or an open stream: watched until it ends
            else:
                unwatch()  # answered here (a refusal may leave the outbox open)
        return self._answer(connection, outbox, answer, era)

    def _post_in_session(self, request: HTTPRequest, message: Message, kind: str, era: Era,
                         plan: Plan | None) -> HTTPResponse:
        header_version = _version_header(request.head)
        if header_version is not None and not era.speaks(header_version):
            raise errors.BadEnvelope(f"Unsupported MCP-Protocol-Version: {request.head.version}")
        initializing = kind == "request" and message["method"] == "initialize"
        if self.stateless_http:
            connection = self.dispatcher.new_legacy_connection()
            connection.initialized = True
        elif initializing:
            if request.head.session_id:
                raise errors.BadEnvelope("Invalid Request: session already initialized")
            connection = self.dispatcher.new_legacy_connection()
            connection.principal = request.principal
        else:
            try:
                connection = self._connection_of(request)
            except errors.EnvelopeError as refused:  # session errors carry "id": null (api.md §5.7)
                return refusal_response(refused)
        if kind == "notification":
            self.dispatcher.handle_notification(message, connection)
            self.sessions.save(connection)
            return _empty(errors.ACCEPTED)
        if kind in ("response", "error"):
            unexpected = self.dispatcher.handle_response(message, connection)
            if unexpected is not None:  # "id": null: the id is the server's own, not a request of the client's
                return refusal_response(errors.BadEnvelope(unexpected.message, code=unexpected.code))
            return _empty(errors.ACCEPTED)
        can_request = request.holds_streams and not self.json_response and not self.stateless_http
        outbox: QueueOutbox | EventLog
        resumable = self._resumable(connection)
        if resumable and self.event_store is not None:
            outbox = StoredEventLog(secrets.token_hex(8), self.event_store, can_request)
        elif resumable:
            outbox = self.sessions.event_log(connection, can_request, message["id"])
        else:
            outbox = QueueOutbox(can_request)
        answer = self.dispatcher.handle_request(message, connection, outbox, self._transport(request, can_request),
                                                here=True, plan=plan)
        if self.dispatcher.opens_session(message, answer):
            if self.sessions.add(connection) is None:
                raise errors.TooManySessions(request_id=message["id"])
        elif connection.id is not None:
            self.sessions.save(connection)
        return self._answer(connection, outbox, answer, era)

    def _connection_of(self, request: HTTPRequest) -> Connection:
        session_id = request.head.session_id
        if not session_id:
            raise errors.MissingSession()
        session_id = session_id.strip()
        connection = self.sessions.get(session_id)
        if connection is None and self.sessions.minted_elsewhere(session_id):
            raise errors.SessionElsewhere()
        if connection is None and self.sessions.lost_with_backend(session_id):
            raise errors.SessionLost()
        # A session id is not a credential: another user presenting it finds no session (protocol.md §2.2).
        if connection is None or connection.principal != request.principal:
            raise errors.SessionNotFound()
        return connection

    def _transport(self, request: HTTPRequest, can_request: bool) -> TransportContext:
        return TransportContext(kind="streamable-http", can_send_request=can_request, headers=request.headers,
                                principal=request.principal, client_address=request.client_address,
                                access_token=request.access_token, make_request=request.native)

    def _resumable(self, connection: Connection) -> bool:
        """Whether this session's SSE answers can be resumed: the era's rule, on an endpoint that
        keeps sessions and streams."""
        return not self.json_response and not self.stateless_http and connection.era.resumable(connection)

    # --- answering a request ---------------------------------------------------------------------
    def _answer(self, connection: Connection, outbox: QueueOutbox | EventLog,
                answer: Message | None, era: Era) -> HTTPResponse:
        """The reply to a request; a JSON answer's status is the era's rule (``errors.status_of``)."""
        headers = {SESSION_HEADER: connection.id} if connection.id else {}
        if answer is not None:
            return self._json_answer(answer, headers, era.error_statuses)
        if isinstance(outbox, EventLog):
            return self._answer_resumable(connection, outbox, headers)
        first = outbox.get(self.keepalive_interval)
        if first is not None and first[1]:
            return self._json_answer(first[0], headers, era.error_statuses)
        if self.json_response:
            final = self._drain_to_final(outbox, first)
            # A request its client cancelled has no answer: the body is empty, as for a notification.
            return _empty(errors.ACCEPTED) if final is None else self._json_answer(final, headers, False)
        return _events(self._stream(outbox, first), headers)

    def _json_answer(self, answer: Message, headers: dict[str, str], by_code: bool) -> HTTPResponse:
        """A JSON answer; an error's status by its code when ``by_code`` (``errors.status_of``)."""
        status = errors.status_of(answer, by_code) if "error" in answer else errors.OK
        if status == errors.UNAVAILABLE:
            headers = {**headers, "Retry-After": str(self.server.backend.retry_after)}
        return json_response(answer, status, headers)

    def _answer_resumable(self, connection: Connection, log: EventLog, headers: dict[str, str]) -> HTTPResponse:
        """JSON when the answer comes first; otherwise a resumable SSE stream opened by a priming event."""
        first = log.read(0, self.keepalive_interval)
        if first is not None and first.final and first.message is not None:
            return self._json_answer(first.message, headers, False)
        connection.retain_stream(log)
        log.share()
        return _events(self._replay(log, 0, first, since=0, prime=True), headers)

    def _resume_point(self, log: EventLog | RemoteLog, seq: int) -> bytes:
        return sse.resume_point(log.event_id(seq), self.retry_interval)

    def _replay(self, log: EventLog | RemoteLog, after: int, event: LogEntry | None, since: int,
                prime: bool) -> Iterator[bytes]:
        """Write ``log`` from after sequence number ``after`` until its final response, or until the
        server closes the stream (``close_stream``), in which case the request keeps running and the
        client resumes with ``Last-Event-ID``. Closes logged up to ``since`` happened before this
        connection existed and are skipped. A client that goes away aborts the request."""
        ended = False
        # The priming event travels in one write with what follows it (one send, one wake-up of the
        # client, the same bytes).
        head = self._resume_point(log, after) if prime else b""
        try:
            while not ended:
                chunk = b""
                if event is None:
                    if log.exhausted(after):
                        ended = True
                    else:
                        self.sessions.sweep()  # the tick that expires a session whose worker waits in vain
                        chunk = sse.KEEPALIVE
                else:
                    after = event.seq
                    if event.message is None:
                        if after > since:
                            ended = True
                            chunk = self._resume_point(log, after)
                    else:
                        ended = event.final
                        chunk = sse.event(event.message, log.event_id(after))
                if head or chunk:
                    yield head + chunk
                    head = b""
                if not ended:
                    event = log.read(after, self.keepalive_interval)
        finally:
            if not ended:
                log.abort()

    def _drain_to_final(self, outbox: QueueOutbox, item: tuple[Message, bool] | None) -> Message | None:
        """The answer, after the messages a JSON body cannot carry; ``None`` once the client cancelled."""
        while item is None or not item[1]:
            if item is None and outbox.unanswered:
                return None
            item = outbox.get(self.keepalive_interval)
        return item[0]

    def _stream(self, outbox: QueueOutbox, first: tuple[Message, bool] | None) -> Iterator[bytes]:
        item = first
        finished = False
        try:
            while True:
                if item is None and outbox.unanswered:
                    return  # the client cancelled the request: its stream ends without the answer
                if item is None:
                    self.sessions.sweep()  # the tick that expires a session whose worker waits in vain
                    yield sse.KEEPALIVE
                else:
                    yield sse.event(item[0])
                    if item[1]:
                        finished = True
                        return
                item = outbox.get(self.keepalive_interval)
        finally:
            if not finished:
                outbox.abort()

    # --- GET and DELETE --------------------------------------------------------------------------
    def _get(self, request: HTTPRequest) -> HTTPResponse:
        if not _accepts(request.head, "text/event-stream"):
            raise errors.NotAcceptable("Not Acceptable: Accept must list text/event-stream")
        if self.stateless_http:
            raise errors.MethodNotAllowed("POST")
        if not request.holds_streams:
            # One thread per process (gunicorn's sync worker, flask run --without-threads): a stream
            # held open would leave no thread for the client's next POST, and it would hang.
            raise errors.MethodNotAllowed("POST, DELETE", "Method Not Allowed: this server runs one thread per process")
        connection = self._connection_of(request)
        last_event_id = request.headers.get("Last-Event-ID")
        if last_event_id:
            return self._resume(connection, last_event_id.strip())
        outbox = QueueOutbox(can_request=True)
        if not connection.attach_standalone(outbox):
            raise errors.StreamConflict()
        return _events(self._standalone(connection, outbox), {SESSION_HEADER: connection.id or ""})

    def _resume(self, connection: Connection, last_event_id: str) -> HTTPResponse:
        """Continue a response stream after the event the client saw last (a GET with ``Last-Event-ID``)."""
        if self.event_store is not None:
            return self._resume_stored(connection, last_event_id)
        stream_id, _, seq = last_event_id.rpartition(":")
        log: EventLog | RemoteLog | None = connection.stream(stream_id) if seq.isdigit() else None
        if log is None and seq.isdigit():
            log = self.sessions.remote_stream(connection, stream_id)
        if log is None or int(seq) > log.last:
            raise errors.UnknownEventId()
        after = int(seq)
        return _events(self._replay(log, after, log.read(after, 0.0), since=log.last, prime=False),
                       {SESSION_HEADER: connection.id or ""})

    def _resume_stored(self, connection: Connection, last_event_id: str) -> HTTPResponse:
        """Resume from the ``event_store``: what it replays, then the live log while the request runs.

        Only a stream of this session is resumed, so one client cannot read another's events by id.
        """
        assert self.event_store is not None
        stream_id, events = replay(self.event_store, last_event_id)
        log = connection.stream(stream_id) if stream_id is not None else None
        if not isinstance(log, StoredEventLog):
            raise errors.UnknownEventId()
        seen = [log.position(event_id) for event_id in (last_event_id, *(event_id for _, event_id in events))
                if event_id is not None]  # an event the store replayed without an id has no place in the log
        after = max((seq for seq in seen if seq is not None), default=log.last)
        return _events(self._replay_stored(events, log, after), {SESSION_HEADER: connection.id or ""})

    def _replay_stored(self, events: list[tuple[Message, str | None]], log: StoredEventLog,
                       after: int) -> Iterator[bytes]:
        for message, event_id in events:
            yield sse.event(message, event_id)
        yield from self._replay(log, after, log.read(after, 0.0), since=log.last, prime=False)

    def _standalone(self, connection: Connection, outbox: QueueOutbox) -> Iterator[bytes]:
        try:
            yield sse.STREAM_OPEN
            while not connection.closed and not outbox.cancelled.is_set():
                item = outbox.get(self.keepalive_interval)
                if item is not None:
                    yield sse.event(item[0])
                elif not outbox.cancelled.is_set():
                    yield sse.KEEPALIVE
        finally:
            connection.detach_standalone(outbox)

    def _delete(self, request: HTTPRequest) -> HTTPResponse:
        if self.stateless_http:
            raise errors.MethodNotAllowed("POST")
        connection = self._connection_of(request)
        if connection.id is None or not self.sessions.remove(connection.id):
            raise errors.SessionNotFound()
        return _empty(errors.OK)
