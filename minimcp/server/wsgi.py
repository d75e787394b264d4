"""Streamable HTTP as a WSGI application.

This file translates HTTP into messages and back; it decides no protocol question. Per request it
checks what only HTTP has (Host/Origin, body size, Content-Type, Accept, the session header),
asks the dispatcher which era the message belongs to, and answers in one of two shapes:

- a JSON body, when the answer is ready before anything else must be said (the common case: an
  echo tool never opens a stream);
- an SSE stream, as soon as a notification or a server-to-client request precedes the answer, or
  the call runs past a keepalive interval. The stream drains the request's outbox and writes a
  comment every ``keepalive_interval`` seconds, which is how a vanished client is noticed: the
  write fails, the generator is closed, and the outbox is aborted so every wait of that call ends
  with "Connection closed".

Legacy sessions (``Mcp-Session-Id``) hold server-to-client requests; their answers arrive as
later POSTs and are routed by id. A 2026-07-28 request is self-contained and never carries a
server-to-client request.

Resumability (legacy sessions at 2025-11-25 or later): an SSE answer is drained from an
``EventLog`` rather than a queue, opens with a priming event (an id, ``retry:``, empty data) and
numbers every event ``<stream id>:<seq>``. When a handler calls ``ctx.close_sse_stream()`` the
response ends with another id-only event and the request keeps running; the client reconnects with
GET and ``Last-Event-ID`` and gets everything after that id from the log. A 2026-07-28 stream has
no ids: a broken one is simply re-issued, and ``subscriptions/listen`` streams stay open until the
client leaves.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request, Response

from minimcp import jsonrpc
from minimcp.jsonrpc import EnvelopeError, MCPError, Message
from minimcp.server.calls import Event, EventLog, QueueOutbox
from minimcp.server.dispatch import MODERN, Dispatcher
from minimcp.server.sessions import ServerSession, SessionManager
from minimcp.server.transport_security import TransportSecuritySettings, host_allowed, origin_allowed
from minimcp.types import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    HEADER_MISMATCH,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)

if TYPE_CHECKING:
    from minimcp.server.app import MCPServer

logger = logging.getLogger("minimcp.server.wsgi")

SESSION_HEADER = "Mcp-Session-Id"
_STATUS_400 = {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
#: The first legacy revision whose clients expect priming events and resume with ``Last-Event-ID``.
RESUMABLE_SINCE = "2025-11-25"


def _json(message: Message | None, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = b"" if message is None else jsonrpc.encode(message)
    return Response(body, status=status, headers=headers, content_type="application/json")


def _plain(text: str, status: int) -> Response:
    return Response(text, status=status, content_type="text/plain")


def _sse(message: Message, event_id: str | None = None) -> bytes:
    prefix = b"" if event_id is None else f"id: {event_id}\n".encode()
    return prefix + b"event: message\ndata: " + jsonrpc.encode(message) + b"\n\n"


def _principal(request: Request) -> str | None:
    """The authenticated user a host framework put in the WSGI environ (``REMOTE_USER``), if any."""
    return request.environ.get("REMOTE_USER") or None


def _accepts(request: Request, *types: str) -> bool:
    accept = request.headers.get("Accept", "")
    offered = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return "*/*" in offered or all(t in offered for t in types)


class MCPWSGIApp:
    """The WSGI callable ``mcp.wsgi_app()`` returns; ``close()`` ends sessions and the lifespan.

    ``keepalive_interval`` (seconds) paces the comments that reveal a vanished client;
    ``retry_interval`` (milliseconds) is the reconnection delay announced on resumable streams;
    ``max_sessions`` caps live legacy sessions (an ``initialize`` beyond it gets 503) and
    ``max_pending_per_session`` the questions one session may leave unanswered at once.
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        streamable_http_path: str = "/mcp",
        json_response: bool = False,
        stateless_http: bool = False,
        max_request_body_size: int = 4 * 1024 * 1024,
        transport_security: TransportSecuritySettings | None = None,
        session_idle_timeout: float = 3600.0,
        keepalive_interval: float = 15.0,
        retry_interval: int = 1000,
        max_sessions: int = 10_000,
        max_pending_per_session: int = 32,
    ) -> None:
        self.server = server
        self.dispatcher: Dispatcher = server.dispatcher
        self.path = "/" + streamable_http_path.strip("/")
        self.json_response = json_response
        self.stateless_http = stateless_http
        self.max_request_body_size = max_request_body_size
        self.security = transport_security or TransportSecuritySettings()
        self.sessions = SessionManager(session_idle_timeout, max_sessions, max_pending_per_session)
        self.keepalive_interval = keepalive_interval
        self.retry_interval = retry_interval
        self._routes = {path: (methods, fn) for path, methods, fn in server.custom_routes}

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        return self._route(request)(environ, start_response)

    def close(self) -> None:
        self.sessions.close()
        self.server.close()

    # --- routing -----------------------------------------------------------------------------
    def _route(self, request: Request) -> Response:
        path = "/" + request.path.strip("/")
        if path != self.path:
            route = self._routes.get(path)
            if route is not None and request.method in route[0]:
                return route[1](request)
            return _plain("Not Found", 404) if route is None else _plain("Method Not Allowed", 405)
        if not host_allowed(self.security, request.headers.get("Host")):
            logger.warning("rejected request with Host %r", request.headers.get("Host"))
            return _plain("Invalid Host header", 421)
        if not origin_allowed(self.security, request.headers.get("Origin")):
            logger.warning("rejected request with Origin %r", request.headers.get("Origin"))
            return _plain("Invalid Origin header", 403)
        if request.method == "POST":
            return self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            return self._delete(request)
        return Response("Method Not Allowed", status=405, headers={"Allow": "GET, POST, DELETE"})

    # --- POST ----------------------------------------------------------------------------------
    def _post(self, request: Request) -> Response:
        if request.content_length is not None and request.content_length > self.max_request_body_size:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Request body too large"), 413)
        if request.mimetype != "application/json":
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Content-Type must be application/json"), 415)
        if not _accepts(request, "application/json", "text/event-stream"):
            return _json(jsonrpc.error(
                None, INVALID_REQUEST, "Not Acceptable: Accept must list application/json and text/event-stream"), 406)
        # One byte over the limit: werkzeug's limited stream stops silently *at* its limit, so a
        # chunked body (no Content-Length) over the limit would otherwise arrive truncated.
        request.max_content_length = self.max_request_body_size + 1
        try:
            body = request.get_data(cache=False)
        except RequestEntityTooLarge:
            body = None
        if body is None or len(body) > self.max_request_body_size:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Request body too large"), 413)
        message: Any = None
        try:
            message = jsonrpc.decode(body)
            kind = jsonrpc.kind_of(message)
        except MCPError as bad:
            return _json(jsonrpc.error_from(jsonrpc.safe_id(message), bad), 400)
        header_version = request.headers.get("MCP-Protocol-Version")
        header_version = header_version.strip(" \t") if header_version is not None else None
        try:
            if self.dispatcher.classify(message, header_version) == MODERN:
                return self._post_modern(request, message, kind)
            return self._post_legacy(request, message, kind)
        except EnvelopeError as refused:
            return _json(jsonrpc.error_from(jsonrpc.safe_id(message), refused), refused.status)

    def _post_modern(self, request: Request, message: Message, kind: str) -> Response:
        session = self.dispatcher.modern_session(message, request.headers)
        if kind == "notification":
            return Response(status=202)
        if kind != "request":
            raise EnvelopeError(400, INVALID_REQUEST, "A 2026-07-28 client sends no responses")
        if self.json_response and self.dispatcher.streams(message):
            raise EnvelopeError(400, INVALID_REQUEST,
                                f"{message['method']} answers with an SSE stream; this endpoint answers JSON only")
        outbox = QueueOutbox(can_request=False)
        return self._answer(request, message, session, outbox, self.dispatcher.handle_request(
            message, session, outbox, request))

    def _post_legacy(self, request: Request, message: Message, kind: str) -> Response:
        header_version = request.headers.get("MCP-Protocol-Version")
        if header_version is not None and header_version.strip(" \t") not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise EnvelopeError(400, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {header_version}")
        initializing = kind == "request" and message["method"] == "initialize"
        if self.stateless_http:
            session = self.dispatcher.new_legacy_session()
            session.initialized = True
        elif initializing:
            if request.headers.get(SESSION_HEADER):
                raise EnvelopeError(400, INVALID_REQUEST, "Invalid Request: session already initialized")
            session = self.dispatcher.new_legacy_session()
            session.principal = _principal(request)
        else:
            try:
                session = self._session(request)
            except EnvelopeError as refused:  # session errors carry "id": null (api.md §5.7)
                return _json(jsonrpc.error_from(None, refused), refused.status)
        if kind == "notification":
            self.dispatcher.handle_notification(message, session)
            return Response(status=202)
        if kind in ("response", "error"):
            self.dispatcher.handle_response(message, session)
            return Response(status=202)
        multithread = request.environ.get("wsgi.multithread", True)
        can_request = multithread and not self.json_response and not self.stateless_http
        outbox: QueueOutbox | EventLog
        if self._resumable(session):
            outbox = EventLog(secrets.token_hex(8), can_request)
        else:
            outbox = QueueOutbox(can_request)
        answer = self.dispatcher.handle_request(message, session, outbox, request)
        if initializing and answer is not None and "result" in answer:
            if self.sessions.add(session) is None:
                return _json(jsonrpc.error(message["id"], INVALID_REQUEST, "Too many sessions; try again later"), 503)
        return self._answer(request, message, session, outbox, answer)

    def _session(self, request: Request) -> ServerSession:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise EnvelopeError(400, INVALID_REQUEST, "Bad Request: Missing Mcp-Session-Id header")
        session = self.sessions.get(session_id.strip())
        # A session id is not a credential: another user presenting it finds no session (protocol.md §2.2).
        if session is None or session.principal != _principal(request):
            raise EnvelopeError(404, INVALID_REQUEST, "Session not found")
        return session

    def _resumable(self, session: ServerSession) -> bool:
        """Whether this session's SSE answers get event ids and can be resumed with ``Last-Event-ID``.

        Only stateful legacy sessions at 2025-11-25 or later: older clients may not expect the empty
        priming event, and a 2026-07-28 request has no session to resume against.
        """
        return (session.legacy and session.id is not None and not self.json_response and not self.stateless_http
                and session.protocol_version >= RESUMABLE_SINCE)

    # --- answering a request ---------------------------------------------------------------------
    def _answer(self, request: Request, message: Message, session: ServerSession, outbox: QueueOutbox | EventLog,
                answer: Message | None) -> Response:
        headers = {SESSION_HEADER: session.id} if session.legacy and session.id else {}
        if answer is not None:
            return _json(answer, self._status(answer, session), headers)
        if isinstance(outbox, EventLog):
            return self._answer_resumable(session, outbox, headers)
        first = outbox.get(self.keepalive_interval)
        if first is not None and first[1]:
            return _json(first[0], self._status(first[0], session), headers)
        if self.json_response:
            return _json(self._drain_to_final(outbox, first), headers=headers)
        return Response(self._stream(outbox, first), headers={**headers, **_SSE_HEADERS},
                        content_type="text/event-stream", direct_passthrough=True)

    @staticmethod
    def _status(answer: Message, session: ServerSession) -> int:
        error = answer.get("error")
        if not session.legacy and error is not None and error.get("code") in _STATUS_400:
            return 400
        return 200

    def _answer_resumable(self, session: ServerSession, log: EventLog, headers: dict[str, str]) -> Response:
        """JSON when the answer comes first; otherwise a resumable SSE stream opened by a priming event."""
        first = log.read(0, self.keepalive_interval)
        if first is not None and first.final and first.message is not None:
            return _json(first.message, self._status(first.message, session), headers)
        session.retain_stream(log)
        return Response(self._replay(log, 0, first, since=0, prime=True), headers={**headers, **_SSE_HEADERS},
                        content_type="text/event-stream", direct_passthrough=True)

    def _resume_point(self, log: EventLog, seq: int) -> bytes:
        """An event with an id and no data: where a reconnecting client resumes, and after how long."""
        return f"id: {log.stream_id}:{seq}\nretry: {self.retry_interval}\ndata: \n\n".encode()

    def _replay(self, log: EventLog, after: int, event: Event | None, since: int, prime: bool) -> Iterator[bytes]:
        """Write ``log`` from after sequence number ``after`` until its final response, or until the
        server closes the stream (``close_stream``), in which case the request keeps running and the
        client resumes with ``Last-Event-ID``. Closes logged up to ``since`` happened before this
        connection existed and are skipped. A client that goes away aborts the request."""
        ended = False
        try:
            if prime:
                yield self._resume_point(log, after)
            while not ended:
                if event is None:
                    if log.exhausted(after):
                        ended = True
                        return
                    self.sessions.sweep()  # the tick that expires a session whose worker waits in vain
                    yield b": keepalive\n\n"
                else:
                    after = event.seq
                    if event.message is None:
                        if after > since:
                            ended = True
                            yield self._resume_point(log, after)
                    else:
                        ended = event.final
                        yield _sse(event.message, f"{log.stream_id}:{after}")
                if not ended:
                    event = log.read(after, self.keepalive_interval)
        finally:
            if not ended:
                log.abort()

    def _drain_to_final(self, outbox: QueueOutbox, item: tuple[Message, bool] | None) -> Message:
        while item is None or not item[1]:
            item = outbox.get(self.keepalive_interval)
        return item[0]

    def _stream(self, outbox: QueueOutbox, first: tuple[Message, bool] | None) -> Iterator[bytes]:
        item = first
        finished = False
        try:
            while True:
                if item is None:
                    self.sessions.sweep()  # the tick that expires a session whose worker waits in vain
                    yield b": keepalive\n\n"
                else:
                    yield _sse(item[0])
                    if item[1]:
                        finished = True
                        return
                item = outbox.get(self.keepalive_interval)
        finally:
            if not finished:
                outbox.abort()

    # --- GET and DELETE --------------------------------------------------------------------------
    def _get(self, request: Request) -> Response:
        if not _accepts(request, "text/event-stream"):
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Not Acceptable: Accept must list text/event-stream"), 406)
        if self.stateless_http:
            return Response("Method Not Allowed", status=405, headers={"Allow": "POST"})
        try:
            session = self._session(request)
        except EnvelopeError as refused:
            return _json(jsonrpc.error_from(None, refused), refused.status)
        last_event_id = request.headers.get("Last-Event-ID")
        if last_event_id:
            return self._resume(session, last_event_id.strip())
        if session.standalone is not None:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Conflict: a standalone stream is already open"), 409)
        outbox = QueueOutbox(can_request=True)
        session.attach_standalone(outbox)
        return Response(self._standalone(session, outbox), headers={SESSION_HEADER: session.id or "", **_SSE_HEADERS},
                        content_type="text/event-stream", direct_passthrough=True)

    def _resume(self, session: ServerSession, last_event_id: str) -> Response:
        """Continue a response stream after the event the client saw last (a GET with ``Last-Event-ID``)."""
        stream_id, _, seq = last_event_id.rpartition(":")
        log = session.stream(stream_id) if seq.isdigit() else None
        if log is None or int(seq) > log.last:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Unknown or expired Last-Event-ID"), 400)
        after = int(seq)
        return Response(self._replay(log, after, log.read(after, 0.0), since=log.last, prime=False),
                        headers={SESSION_HEADER: session.id or "", **_SSE_HEADERS},
                        content_type="text/event-stream", direct_passthrough=True)

    def _standalone(self, session: ServerSession, outbox: QueueOutbox) -> Iterator[bytes]:
        try:
            yield b": stream open\n\n"
            while not session.closed and not outbox.cancelled.is_set():
                item = outbox.get(self.keepalive_interval, until_cancelled=True)
                if item is not None:
                    yield _sse(item[0])
                elif not outbox.cancelled.is_set():
                    yield b": keepalive\n\n"
        finally:
            if session.standalone is outbox:
                session.attach_standalone(None)

    def _delete(self, request: Request) -> Response:
        if self.stateless_http:
            return Response("Method Not Allowed", status=405, headers={"Allow": "POST"})
        try:
            session = self._session(request)
        except EnvelopeError as refused:
            return _json(jsonrpc.error_from(None, refused), refused.status)
        if session.id is None or not self.sessions.remove(session.id):
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Session not found"), 404)
        return Response(status=200)


def serve_http(server: MCPServer, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
    """Serve ``server`` with werkzeug's threaded server until interrupted."""
    from werkzeug.serving import make_server

    app = MCPWSGIApp(server, **options)
    httpd = make_server(host, port, app, threaded=True)
    logger.info("serving MCP on http://%s:%s%s", host, httpd.server_port, app.path)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        app.sessions.close()

