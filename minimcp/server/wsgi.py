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
server-to-client request; one that asked for no progress and no log messages runs on the thread
that received it (``Dispatcher.quiet``), so it answers JSON however long it runs, and a client
that vanishes meanwhile is noticed when the answer is written.

Resumability (legacy sessions at 2025-11-25 or later): an SSE answer is drained from an
``EventLog`` rather than a queue, opens with a priming event (an id, ``retry:``, empty data) and
numbers every event ``<stream id>:<seq>``. When a handler calls ``ctx.close_sse_stream()`` the
response ends with another id-only event and the request keeps running; the client reconnects with
GET and ``Last-Event-ID`` and gets everything after that id from the log. A 2026-07-28 stream has
no ids: a broken one is simply re-issued, and ``subscriptions/listen`` streams stay open until the
client leaves.
"""

from __future__ import annotations

import functools
import inspect
import logging
import secrets
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request

from minimcp import jsonrpc
from minimcp.jsonrpc import EnvelopeError, MCPError, Message
from minimcp.server.lowlevel.outbox import EventLog, LogEntry, QueueOutbox
from minimcp.server.backends import BackendUnavailable
from minimcp.server.streamable_http import EventStore, StoredEventLog, replay
from minimcp.server.lowlevel.dispatch import MODERN, Dispatcher
from minimcp.server.auth import ACCESS_TOKEN_KEY
from minimcp.server.lowlevel.sessions import Connection, SessionManager
from minimcp.server.lowlevel.shared_sessions import RemoteLog, SharedSessionManager
from minimcp.shared.transport_context import TransportContext
from minimcp.server.transport_security import TransportSecuritySettings, host_allowed, origin_allowed
from minimcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from minimcp.types import HANDSHAKE_PROTOCOL_VERSIONS, INTERNAL_ERROR, INVALID_REQUEST

if TYPE_CHECKING:
    from minimcp.server.auth.middleware.bearer_auth import AuthChallenge
    from minimcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
    from minimcp.server.auth.resource_server import ProtectedResource
    from minimcp.server.auth.settings import AuthSettings
    from minimcp.server.lowlevel.server import Server

logger = logging.getLogger("minimcp.server.wsgi")

SESSION_HEADER = "Mcp-Session-Id"
_SESSION_KEY = "HTTP_MCP_SESSION_ID"
_VERSION_KEY = "HTTP_MCP_PROTOCOL_VERSION"


def http_status(code: int) -> int:
    """The status a 2026-07-28 error travels with, refused by the ladder or failed by a handler."""
    return ERROR_CODE_HTTP_STATUS.get(code, 200)


def _error_status(answer: Message) -> int:
    """A 2026-07-28 answer's status: an error's by ``ERROR_CODE_HTTP_STATUS``; 503 when a handler
    failed because the shared state was unreachable (the client retries instead of giving up)."""
    error = answer.get("error")
    if error is None:
        return 200
    return 503 if error.get("message") == BackendUnavailable.MESSAGE else http_status(error.get("code"))


def _ok(answer: Message) -> int:
    """A legacy answer's status: 200, error or not (the error is in the JSON-RPC body)."""
    return 200

_SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}
#: The first legacy revision whose clients expect priming events and resume with ``Last-Event-ID``.
RESUMABLE_SINCE = "2025-11-25"


class _Reply:
    """One answer of this endpoint, as a WSGI application.

    werkzeug's ``Response`` (header objects, encodings, conditional requests) cost about as much as
    all the rest of the HTTP handling of an echo call; a JSON body or an SSE stream needs none of it.
    """

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: list[tuple[str, str]], body: Iterable[bytes]) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        start_response(_STATUS_LINES[self.status], self.headers)
        return self.body


def _bytes(body: bytes, status: int, content_type: str, headers: dict[str, str] | None = None) -> _Reply:
    fields = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    if headers:
        fields.extend(headers.items())
    return _Reply(status, fields, [body])


def _json(message: Message, status: int = 200, headers: dict[str, str] | None = None) -> _Reply:
    return _bytes(jsonrpc.encode(message), status, "application/json", headers)


def _plain(text: str, status: int, headers: dict[str, str] | None = None) -> _Reply:
    return _bytes(text.encode(), status, "text/plain; charset=utf-8", headers)


def _unavailable(down: BackendUnavailable, request_id: Any = None) -> _Reply:
    """503 with ``Retry-After`` while the shared state is unreachable: a client waits and retries,
    where a 404 "Session not found" would make it start over."""
    return _json(jsonrpc.error(request_id, INTERNAL_ERROR, str(down)), 503, {"Retry-After": str(down.retry_after)})


def _empty(status: int) -> _Reply:
    return _Reply(status, [("Content-Length", "0")], [])


def _events(body: Iterator[bytes], headers: dict[str, str]) -> _Reply:
    return _Reply(200, [*_SSE_HEADERS, *headers.items()], body)


def _sse(message: Message, event_id: str | None = None) -> bytes:
    prefix = b"" if event_id is None else f"id: {event_id}\n".encode()
    return prefix + b"event: message\ndata: " + jsonrpc.encode(message) + b"\n\n"


class _EnvironHeaders(Mapping[str, str]):
    """Request headers by case-insensitive name, read straight from the WSGI environ (werkzeug's
    ``EnvironHeaders`` costs ten times as much per lookup, and the header checks look up several)."""

    __slots__ = ("_environ",)

    def __init__(self, environ: dict[str, Any]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            return self._environ[key]
        return self._environ["HTTP_" + key]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        for key in self._environ:
            if key.startswith("HTTP_"):
                yield key[5:].replace("_", "-").title()
            elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and self._environ[key]:
                yield key.replace("_", "-").title()

    def __len__(self) -> int:
        return sum(1 for _ in self)


PrincipalHook = Callable[[dict[str, Any]], "str | None"]


def remote_user(environ: dict[str, Any]) -> str | None:
    """The default principal hook: the user a host framework or proxy authenticated (``REMOTE_USER``)."""
    return environ.get("REMOTE_USER") or None


def _accepts(environ: dict[str, Any], *types: str) -> bool:
    offered = {part.split(";")[0].strip().lower() for part in environ.get("HTTP_ACCEPT", "").split(",")}
    return "*/*" in offered or all(t in offered for t in types)


def _content_length(environ: dict[str, Any]) -> int | None:
    value = environ.get("CONTENT_LENGTH", "")
    return int(value) if value.isdigit() else None


def _version_header(environ: dict[str, Any]) -> str | None:
    value = environ.get(_VERSION_KEY)
    return value.strip(" \t") if value is not None else None


class RouteResponseError(TypeError):
    """A custom route returned something a WSGI server cannot send; the message says what to return."""


def check_route_response(response: Any, path: str) -> None:
    """Refuse a custom route's response that is not a WSGI application, naming what to return.

    The likely one is a ported Starlette response: an ASGI application, whose ``__call__`` is a
    coroutine function taking ``(scope, receive, send)``.
    """
    asgi = inspect.iscoroutinefunction(getattr(type(response), "__call__", None))
    if callable(response) and not asgi:
        return
    kind = type(response)
    what = "an ASGI (Starlette) response" if asgi else "not a WSGI response"
    raise RouteResponseError(
        f"custom route {path} returned {kind.__module__}.{kind.__qualname__}, {what}. Return a werkzeug "
        "response instead: `from werkzeug.wrappers import Response`, then `Response(text, status=200, "
        "mimetype='text/plain')`, or for JSON `Response(json.dumps(data), mimetype='application/json')` "
        "(any WSGI application works)"
    )


class MCPWSGIApp:
    """The WSGI callable ``mcp.wsgi_app()`` returns; ``close()`` ends sessions and the lifespan.

    ``keepalive_interval`` (seconds) paces the comments that reveal a vanished client;
    ``retry_interval`` (milliseconds) is the reconnection delay announced on resumable streams;
    ``event_store`` (``minimcp.server.streamable_http.EventStore``) keeps their events, under its
    ids, in storage of your choosing (by default they live in the process, in each request's log);
    ``max_sessions`` caps live legacy sessions (an ``initialize`` beyond it gets 503) and
    ``max_pending_per_session`` the questions one session may leave unanswered at once.

    ``principal`` is the one place the caller's identity is read: a function of the WSGI environ
    returning a stable user id, or ``None`` for an anonymous caller. The default reads
    ``REMOTE_USER``; an authorization layer replaces it (the bearer token's subject, say). What it
    returns binds legacy sessions (another principal presenting the id finds no session) and
    sealed ``requestState``, and handlers see it as ``ctx.request_context.transport.principal``.

    ``auth``, ``token_verifier`` and ``auth_server_provider`` protect the endpoint (the server's own
    by default, see ``Server(auth=...)``): every request to it must carry a bearer token the
    verifier accepts, the principal becomes the token's holder, and the metadata and (with a
    provider) authorization-server routes are served beside it.

    ``debug=True`` is the official ``streamable_http_app(debug=True)`` (Starlette's debug mode): a
    custom route that raises answers 500 with its traceback as plain text instead of a bare
    "Internal Server Error". The traceback is logged either way. For an interactive debugger, wrap
    the app in ``werkzeug.debug.DebuggedApplication`` (development only: it can run code).
    """

    def __init__(
        self,
        server: Server[Any],
        *,
        streamable_http_path: str = "/mcp",
        json_response: bool = False,
        stateless_http: bool = False,
        max_request_body_size: int = 4 * 1024 * 1024,
        transport_security: TransportSecuritySettings | None = None,
        session_idle_timeout: float = 3600.0,
        keepalive_interval: float = 15.0,
        retry_interval: int = 1000,
        event_store: EventStore | None = None,
        max_sessions: int = 10_000,
        max_pending_per_session: int = 32,
        principal: PrincipalHook | None = None,
        auth: AuthSettings | None = None,
        token_verifier: TokenVerifier | None = None,
        auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
        debug: bool = False,
    ) -> None:
        self.server = server
        self.debug = debug
        self.dispatcher: Dispatcher = server.dispatcher
        self.path = "/" + streamable_http_path.strip("/")
        self.json_response = json_response
        self.stateless_http = stateless_http
        self.max_request_body_size = max_request_body_size
        self.security = transport_security or TransportSecuritySettings()
        self.sessions: SessionManager = (
            SharedSessionManager(server.backend, self.dispatcher, session_idle_timeout, max_sessions,
                                 max_pending_per_session) if server.backend.shared
            else SessionManager(session_idle_timeout, max_sessions, max_pending_per_session))
        self.keepalive_interval = keepalive_interval
        self.retry_interval = retry_interval
        self.event_store = event_store
        #: path -> method -> (handler, whether Host and Origin are checked). Keyed by both, so two
        #: routes on one path with different methods are both served; the later of two routes for
        #: the same path and method replaces the earlier one.
        self._routes: dict[str, dict[str, tuple[Callable[[Request], Any], bool]]] = {}
        for path, methods, fn, protected in server.custom_routes:
            self._add_route(path, methods, fn, protected)
        self.auth: ProtectedResource | None = None
        if auth is None and token_verifier is None and auth_server_provider is None:
            auth, token_verifier, auth_server_provider = server.auth_options
        if auth is not None or token_verifier is not None or auth_server_provider is not None:
            from minimcp.server.auth.resource_server import ProtectedResource, check_auth_options

            check_auth_options(auth, token_verifier, auth_server_provider, exclusive=False)
            if auth is not None:
                self.auth = ProtectedResource(auth, token_verifier, auth_server_provider, server.list_tool_scopes())
                # Unchecked: browser-based clients on other origins call them (they answer CORS).
                for path, methods, fn in self.auth.routes:
                    self._add_route(path, methods, fn, False)
        self.principal: PrincipalHook = principal or (self.auth.principal if self.auth is not None else remote_user)
        #: What a request enters: the app itself, inside the WSGI middleware ``add_middleware`` added.
        self._entry: Callable[[dict[str, Any], Any], Any] = self._routed
        #: Whether the per-process-keys warning was logged (once per app; a plain bool, a racy second
        #: warning is harmless).
        self._warned_keys = False

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self._entry(environ, start_response)

    def _routed(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self._route(environ)(environ, start_response)

    def add_middleware(self, middleware: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Wrap the whole app (the MCP endpoint and every route) in a WSGI middleware, built as
        ``middleware(app, *args, **kwargs)``: the ported form of Starlette's
        ``app.add_middleware(cls, ...)``. The last one added sees a request first. Add them before
        serving: a request already inside keeps the chain it entered."""
        call = getattr(middleware, "__call__", None)
        if inspect.iscoroutinefunction(middleware) or inspect.iscoroutinefunction(call):
            raise TypeError(f"{getattr(middleware, '__name__', middleware)!r} is an ASGI middleware; this app is "
                            "WSGI: use a WSGI middleware (a callable taking the app, returning a WSGI app), "
                            "e.g. werkzeug.middleware.proxy_fix.ProxyFix")
        self._entry = middleware(self._entry, *args, **kwargs)

    def close(self) -> None:
        self.sessions.close()
        self.server.close()

    # --- routing -----------------------------------------------------------------------------
    def _add_route(self, path: str, methods: Iterable[str], handler: Callable[[Request], Any], protected: bool) -> None:
        path = "/" + path.strip("/")
        if path == self.path:
            raise ValueError(
                f"custom route {getattr(handler, '__name__', handler)!r} is registered on {path}, the MCP "
                f"endpoint's own path, where it would never be reached; give the route another path, or "
                f"serve the MCP endpoint elsewhere with wsgi_app(streamable_http_path=...)"
            )
        by_method = self._routes.setdefault(path, {})
        for method in methods:
            by_method[method.upper()] = (handler, protected)

    def _route(self, environ: dict[str, Any]) -> Any:
        """The WSGI application that answers this request: a ``_Reply``, or a custom route's response."""
        path = "/" + environ.get("PATH_INFO", "").strip("/")
        method = environ["REQUEST_METHOD"]
        if path != self.path:
            by_method = self._routes.get(path)
            if by_method is None:
                return _plain("Not Found", 404)
            route = by_method.get(method)
            if route is None and method == "HEAD":
                route = by_method.get("GET")  # a GET route answers HEAD too, as HTTP asks of it
            if route is None:
                allowed = sorted({*by_method, "HEAD"} if "GET" in by_method else by_method)
                return _plain("Method Not Allowed", 405, {"Allow": ", ".join(allowed)})
            handler, protected = route
        else:
            protected, handler = True, None
        refused = self._rebinding_refusal(environ) if protected else None
        if refused is not None:
            return refused
        if handler is not None:
            return self._custom(handler, environ, path)
        if self.auth is not None:
            return self._authenticated(environ, method)
        return self._serve(environ, method)

    def _custom(self, handler: Callable[[Request], Any], environ: dict[str, Any], path: str) -> Any:
        """A custom route's response; a route that raises, or returns something that is not a WSGI
        response, answers 500 (with the traceback when ``debug``) and leaves the traceback in the log."""
        try:
            response = handler(Request(environ))
            check_route_response(response, path)
            return response
        except Exception as failure:
            logger.exception("custom route %s failed", path)
            if self.debug:
                return _plain(traceback.format_exc(), 500)
            return _plain(str(failure) if isinstance(failure, RouteResponseError) else "Internal Server Error", 500)

    def _rebinding_refusal(self, environ: dict[str, Any]) -> _Reply | None:
        """The answer to a request whose ``Host`` or ``Origin`` ``transport_security`` does not allow
        (DNS-rebinding protection), else ``None``."""
        host = environ.get("HTTP_HOST")
        if not host_allowed(self.security, host):
            logger.warning("rejected request with Host %r", host)
            return _plain("Invalid Host header", 421)
        origin = environ.get("HTTP_ORIGIN")
        if not origin_allowed(self.security, origin):
            logger.warning("rejected request with Origin %r", origin)
            return _plain("Invalid Origin header", 403)
        return None

    def _serve(self, environ: dict[str, Any], method: str) -> _Reply:
        try:
            if method == "POST":
                return self._post(environ)
            if method == "GET":
                return self._get(environ)
            if method == "DELETE":
                return self._delete(environ)
        except EnvelopeError as refused:  # a missing or unknown session: no request id to answer
            return _json(jsonrpc.error_from(None, refused), refused.status)
        except BackendUnavailable as down:
            return _unavailable(down)
        return _plain("Method Not Allowed", 405, {"Allow": "GET, POST, DELETE"})

    # --- authorization -----------------------------------------------------------------------------
    def _authenticated(self, environ: dict[str, Any], method: str) -> _Reply:
        """Serve a request to a protected endpoint once its bearer token checks out.

        The token is the current one (``get_access_token()``) while the request is dispatched; a
        call's worker runs in a copy of this thread's context, so the tool sees it too.
        """
        from minimcp.server.auth.middleware.auth_context import auth_context_var
        from minimcp.server.auth.middleware.bearer_auth import AuthChallenge

        assert self.auth is not None
        try:
            token = self.auth.authenticate(environ)
        except AuthChallenge as refused:
            return self._challenge(refused)
        current = auth_context_var.set(token)
        try:
            return self._serve(environ, method)
        finally:
            auth_context_var.reset(current)

    def _challenge(self, refused: AuthChallenge) -> _Reply:
        www_authenticate = refused.www_authenticate(self.auth.resource_metadata_url if self.auth else None)
        return _bytes(refused.body(), refused.status, "application/json", {"WWW-Authenticate": www_authenticate})

    def _scopes_refusal(self, environ: dict[str, Any], message: Message) -> _Reply | None:
        """The 403 for a call to a tool whose ``required_scopes`` the caller's token lacks."""
        needed = self.dispatcher.required_scopes(message)
        if not needed:
            return None
        from minimcp.server.auth.resource_server import scope_challenge

        refused = scope_challenge(self.auth, environ.get(ACCESS_TOKEN_KEY), needed)
        return None if refused is None else self._challenge(refused)

    # --- POST ----------------------------------------------------------------------------------
    def _post(self, environ: dict[str, Any]) -> _Reply:
        length = _content_length(environ)
        if length is not None and length > self.max_request_body_size:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Request body too large"), 413)
        if environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower() != "application/json":
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Content-Type must be application/json"), 415)
        if not _accepts(environ, "application/json", "text/event-stream"):
            return _json(jsonrpc.error(
                None, INVALID_REQUEST, "Not Acceptable: Accept must list application/json and text/event-stream"), 406)
        body = self._body(environ, length)
        if body is None or len(body) > self.max_request_body_size:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Request body too large"), 413)
        try:
            message, kind = jsonrpc.parse(body)
        except jsonrpc.Unreadable as bad:
            return _json(bad.reply, 400)
        if kind == "request":
            refused = self._scopes_refusal(environ, message)
            if refused is not None:
                return refused
        if environ.get("wsgi.multiprocess") and not self._warned_keys and self.server.keys_per_process():
            self._warned_keys = True
            logger.warning(
                "this WSGI server runs several processes, but each seals requestState with keys of its own, so a "
                "2026-07-28 retry landing on another process fails with -32602. Pass backend=\"redis://host:6379/0\" "
                "(keys made once and shared), or RequestStateSecurity(keys=[...]) with the same keys everywhere")
        try:
            if self.dispatcher.era_of(message, _version_header(environ)) == MODERN:
                return self._post_modern(environ, message, kind)
            return self._post_legacy(environ, message, kind)
        except EnvelopeError as refused:
            return _json(jsonrpc.error_from(jsonrpc.safe_id(message), refused), refused.status)
        except BackendUnavailable as down:
            return _unavailable(down, jsonrpc.safe_id(message))
        except MCPError as refused:  # the core refused the envelope of a 2026-07-28 request
            return _json(jsonrpc.error_from(jsonrpc.safe_id(message), refused), http_status(refused.code))

    def _body(self, environ: dict[str, Any], length: int | None) -> bytes | None:
        """The request body, or ``None`` when it is over the limit."""
        if length is not None:
            stream = environ["wsgi.input"]
            parts = []
            while length > 0:  # a WSGI input may return fewer bytes than asked for
                part = stream.read(length)
                if not part:
                    break
                parts.append(part)
                length -= len(part)
            return b"".join(parts)
        # No Content-Length (a chunked body): werkzeug knows each server's way of marking its end.
        # One byte over the limit, because its limited stream stops silently *at* the limit.
        request = Request(environ)
        request.max_content_length = self.max_request_body_size + 1
        try:
            return request.get_data(cache=False)
        except RequestEntityTooLarge:
            return None

    def _post_modern(self, environ: dict[str, Any], message: Message, kind: str) -> _Reply:
        session = self.dispatcher.modern_session(message, _EnvironHeaders(environ))
        if kind == "notification":
            return _empty(202)
        if kind != "request":
            raise EnvelopeError(400, INVALID_REQUEST, "A 2026-07-28 client sends no responses")
        if self.json_response and self.dispatcher.streams(message):
            raise EnvelopeError(400, INVALID_REQUEST,
                                f"{message['method']} answers with an SSE stream; this endpoint answers JSON only")
        outbox = QueueOutbox(can_request=False)
        return self._answer(message, session, outbox, self.dispatcher.handle_request(
            message, session, outbox, self._transport(environ, outbox.can_request), here=True), _error_status)

    def _post_legacy(self, environ: dict[str, Any], message: Message, kind: str) -> _Reply:
        header_version = _version_header(environ)
        if header_version is not None and header_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise EnvelopeError(400, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {environ[_VERSION_KEY]}")
        initializing = kind == "request" and message["method"] == "initialize"
        if self.stateless_http:
            session = self.dispatcher.new_legacy_session()
            session.initialized = True
        elif initializing:
            if environ.get(_SESSION_KEY):
                raise EnvelopeError(400, INVALID_REQUEST, "Invalid Request: session already initialized")
            session = self.dispatcher.new_legacy_session()
            session.principal = self.principal(environ)
        else:
            try:
                session = self._session(environ)
            except EnvelopeError as refused:  # session errors carry "id": null (api.md §5.7)
                return _json(jsonrpc.error_from(None, refused), refused.status)
        if kind == "notification":
            self.dispatcher.handle_notification(message, session)
            self.sessions.save(session)
            return _empty(202)
        if kind in ("response", "error"):
            self.dispatcher.handle_response(message, session)
            return _empty(202)
        multithread = environ.get("wsgi.multithread", True)
        can_request = multithread and not self.json_response and not self.stateless_http
        outbox: QueueOutbox | EventLog
        if self._resumable(session) and self.event_store is not None:
            outbox = StoredEventLog(secrets.token_hex(8), self.event_store, can_request)
        elif self._resumable(session):
            outbox = self.sessions.event_log(session, can_request, message["id"])
        else:
            outbox = QueueOutbox(can_request)
        answer = self.dispatcher.handle_request(message, session, outbox, self._transport(environ, can_request))
        if self.dispatcher.opens_session(message, answer):
            if self.sessions.add(session) is None:
                return _json(jsonrpc.error(message["id"], INVALID_REQUEST, "Too many sessions; try again later"), 503)
        elif session.id is not None:
            self.sessions.save(session)
        return self._answer(message, session, outbox, answer, _ok)

    def _session(self, environ: dict[str, Any]) -> Connection:
        session_id = environ.get(_SESSION_KEY)
        if not session_id:
            raise EnvelopeError(400, INVALID_REQUEST, "Bad Request: Missing Mcp-Session-Id header")
        session = self.sessions.get(session_id.strip())
        # A session id is not a credential: another user presenting it finds no session (protocol.md §2.2).
        if session is None or session.principal != self.principal(environ):
            raise EnvelopeError(404, INVALID_REQUEST, "Session not found")
        return session

    def _transport(self, environ: dict[str, Any], can_request: bool) -> TransportContext:
        return TransportContext(kind="streamable-http", can_send_request=can_request,
                                headers=_EnvironHeaders(environ), principal=self.principal(environ),
                                client_address=environ.get("REMOTE_ADDR") or None,
                                access_token=environ.get(ACCESS_TOKEN_KEY),
                                make_request=functools.partial(Request, environ))

    def _resumable(self, session: Connection) -> bool:
        """Whether this session's SSE answers get event ids and can be resumed with ``Last-Event-ID``.

        Only stateful legacy sessions at 2025-11-25 or later: older clients may not expect the empty
        priming event, and a 2026-07-28 request has no session to resume against.
        """
        return (session.id is not None and not self.json_response and not self.stateless_http
                and session.protocol_version >= RESUMABLE_SINCE)

    # --- answering a request ---------------------------------------------------------------------
    def _answer(self, message: Message, session: Connection, outbox: QueueOutbox | EventLog,
                answer: Message | None, status: Callable[[Message], int]) -> _Reply:
        """The reply to a request; ``status``: the HTTP status of a JSON answer, by the path (era)
        the request took."""
        headers = {SESSION_HEADER: session.id} if session.id else {}
        if answer is not None:
            return self._json_answer(answer, status(answer), headers)
        if isinstance(outbox, EventLog):
            return self._answer_resumable(session, outbox, headers)
        first = outbox.get(self.keepalive_interval)
        if first is not None and first[1]:
            return self._json_answer(first[0], status(first[0]), headers)
        if self.json_response:
            return _json(self._drain_to_final(outbox, first), headers=headers)
        return _events(self._stream(outbox, first), headers)

    def _json_answer(self, answer: Message, status: int, headers: dict[str, str]) -> _Reply:
        if status == 503:
            headers = {**headers, "Retry-After": str(self.server.backend.retry_after)}
        return _json(answer, status, headers)

    def _answer_resumable(self, session: Connection, log: EventLog, headers: dict[str, str]) -> _Reply:
        """JSON when the answer comes first; otherwise a resumable SSE stream opened by a priming event."""
        first = log.read(0, self.keepalive_interval)
        if first is not None and first.final and first.message is not None:
            return _json(first.message, 200, headers)
        session.retain_stream(log)
        log.share()
        return _events(self._replay(log, 0, first, since=0, prime=True), headers)

    def _resume_point(self, log: EventLog, seq: int) -> bytes:
        """An event with an id and no data: where a reconnecting client resumes, and after how long."""
        return f"id: {log.event_id(seq)}\nretry: {self.retry_interval}\ndata: \n\n".encode()

    def _replay(self, log: EventLog | RemoteLog, after: int, event: LogEntry | None, since: int, prime: bool) -> Iterator[bytes]:
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
                        yield _sse(event.message, log.event_id(after))
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
    def _get(self, environ: dict[str, Any]) -> _Reply:
        if not _accepts(environ, "text/event-stream"):
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Not Acceptable: Accept must list text/event-stream"), 406)
        if self.stateless_http:
            return _plain("Method Not Allowed", 405, {"Allow": "POST"})
        if not environ.get("wsgi.multithread", True):
            # One thread per process (gunicorn's sync worker, flask run --without-threads): a stream
            # held open would leave no thread for the client's next POST, and it would hang.
            return _plain("Method Not Allowed: this server runs one thread per process", 405, {"Allow": "POST, DELETE"})
        session = self._session(environ)
        last_event_id = environ.get("HTTP_LAST_EVENT_ID")
        if last_event_id:
            return self._resume(session, last_event_id.strip())
        outbox = QueueOutbox(can_request=True)
        if not session.attach_standalone(outbox):
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Conflict: a standalone stream is already open"), 409)
        return _events(self._standalone(session, outbox), {SESSION_HEADER: session.id or ""})

    def _resume(self, session: Connection, last_event_id: str) -> _Reply:
        """Continue a response stream after the event the client saw last (a GET with ``Last-Event-ID``)."""
        if self.event_store is not None:
            return self._resume_stored(session, last_event_id)
        stream_id, _, seq = last_event_id.rpartition(":")
        log: EventLog | RemoteLog | None = session.stream(stream_id) if seq.isdigit() else None
        if log is None and seq.isdigit():
            log = self.sessions.remote_stream(session, stream_id)
        if log is None or int(seq) > log.last:
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Unknown or expired Last-Event-ID"), 400)
        after = int(seq)
        return _events(self._replay(log, after, log.read(after, 0.0), since=log.last, prime=False),
                       {SESSION_HEADER: session.id or ""})

    def _resume_stored(self, session: Connection, last_event_id: str) -> _Reply:
        """Resume from the ``event_store``: what it replays, then the live log while the request runs.

        Only a stream of this session is resumed, so one client cannot read another's events by id.
        """
        assert self.event_store is not None
        stream_id, events = replay(self.event_store, last_event_id)
        log = session.stream(stream_id) if stream_id is not None else None
        if not isinstance(log, StoredEventLog):
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Unknown or expired Last-Event-ID"), 400)
        seen = [log.position(event_id) for event_id in (last_event_id, *(event_id for _, event_id in events))]
        after = max((seq for seq in seen if seq is not None), default=log.last)
        return _events(self._replay_stored(events, log, after), {SESSION_HEADER: session.id or ""})

    def _replay_stored(self, events: list[tuple[Message, str | None]], log: StoredEventLog,
                       after: int) -> Iterator[bytes]:
        for message, event_id in events:
            yield _sse(message, event_id)
        yield from self._replay(log, after, log.read(after, 0.0), since=log.last, prime=False)

    def _standalone(self, session: Connection, outbox: QueueOutbox) -> Iterator[bytes]:
        try:
            yield b": stream open\n\n"
            while not session.closed and not outbox.cancelled.is_set():
                item = outbox.get(self.keepalive_interval)
                if item is not None:
                    yield _sse(item[0])
                elif not outbox.cancelled.is_set():
                    yield b": keepalive\n\n"
        finally:
            session.detach_standalone(outbox)

    def _delete(self, environ: dict[str, Any]) -> _Reply:
        if self.stateless_http:
            return _plain("Method Not Allowed", 405, {"Allow": "POST"})
        session = self._session(environ)
        if session.id is None or not self.sessions.remove(session.id):
            return _json(jsonrpc.error(None, INVALID_REQUEST, "Session not found"), 404)
        return _empty(200)
