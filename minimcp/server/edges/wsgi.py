"""Streamable HTTP as a WSGI application: the adapter between a WSGI server and the exchange.

The endpoint itself is ``minimcp.server.edges.http.exchange``, which knows no WSGI: this file
turns an environ into an ``HTTPRequest`` (the headers read straight from the environ, the body read
once the headers have passed, the caller from the principal hook, after the bearer check when the
endpoint is protected) and writes the ``HTTPResponse`` through ``start_response``. What is WSGI's
own stays here: the custom routes (werkzeug ``Request`` handlers), ``add_middleware``, and
``serve_http``. Every status comes from ``minimcp.server.edges.http.errors``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import socket
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request

from minimcp.httpd.affinity import ProcessPin
from minimcp.httpd.hangups import CAN_WATCH, HANGUPS, Unwatch
from minimcp.server.auth import ACCESS_TOKEN_KEY
from minimcp.server.auth.middleware.bearer_auth import AuthChallenge
from minimcp.server.auth.options import AuthKeywords, AuthOptions
from minimcp.server.core.options import gather, keyword_names, refuse_unknown
from minimcp.server.edges.http import errors
from minimcp.server.edges.http.exchange import (
    HEAD_FIELDS,
    Exchange,
    Head,
    HTTPRequest,
    HTTPResponse,
    challenge_response,
    plain_response,
    refusal_response,
)
from minimcp.server.edges.http.options import HTTPKeywords, HTTPOptions

if TYPE_CHECKING:
    from minimcp.server.auth.resource_server import ProtectedResource
    from minimcp.server.core.dispatch import ServedServer

logger = logging.getLogger("minimcp.server.wsgi")


#: The two request headers CGI keeps without the ``HTTP_`` prefix, by name and by environ key;
#: an empty value there means the header was not sent.
_UNPREFIXED = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}
_CGI_KEYS = frozenset(_UNPREFIXED.values())


class _Table(dict[str, str]):
    """A name rewriting remembered: the same few names come with every request, and rewriting one
    costs more than looking it up. Up to ``LIMIT`` names are kept (a client chooses its header
    names); past it a new one is rewritten each time."""

    LIMIT = 512

    def __init__(self, rewrite: Callable[[str], str]) -> None:
        super().__init__()
        self._rewrite = rewrite

    def __missing__(self, name: str) -> str:
        rewritten = self._rewrite(name)
        if len(self) < self.LIMIT:  # a racing thread may add one more: the bound is not exact
            self[name] = rewritten
        return rewritten


def _field_name(key: str) -> str:
    """The header an environ key holds, in lower case (``HTTP_MCP_METHOD`` -> ``mcp-method``); ``""``
    for one that holds none, and for an ``HTTP_CONTENT_TYPE`` or ``HTTP_CONTENT_LENGTH`` a server may
    add: those two are read from their CGI keys only, so each is named once."""
    name = key[5:].replace("_", "-").lower() if key[:5] == "HTTP_" else ""
    return "" if name in _UNPREFIXED else name


#: ``Head``'s fields by environ key.
_HEAD_KEYS = tuple(_UNPREFIXED.get(name.lower()) or "HTTP_" + name.upper().replace("-", "_") for name in HEAD_FIELDS)
#: Environ key -> ``_field_name``.
_field_names = _Table(_field_name)
#: Header name, in any case -> its environ key (``Mcp-Method`` -> ``HTTP_MCP_METHOD``).
_environ_keys = _Table(lambda name: _UNPREFIXED.get(name.lower()) or "HTTP_" + name.upper().replace("-", "_"))


class EnvironHeaders(Mapping[str, str]):
    """The header fields of a WSGI (or CGI-style, as Django's ``request.META``) environ, by
    case-insensitive name, read where they are: the exchange looks up a dozen of a request's
    fields, and copying all of them out first costs more than those lookups. Iterated, it names
    the fields in lower case."""

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    def get(self, name: str, default: Any = None) -> Any:
        if not isinstance(name, str):
            return default
        key = _environ_keys[name]
        value = self._environ.get(key)
        if value is None or (not value and key in _CGI_KEYS):
            return default
        return value

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return self.get(name) is not None  # type: ignore[arg-type]

    def head(self) -> Head:
        """The fields the exchange reads of every request, straight from the environ in one pass
        (an empty CGI value stays empty, which the exchange reads as absent)."""
        return Head._make(map(self._environ.get, _HEAD_KEYS))

    def __iter__(self) -> Iterator[str]:
        environ = self._environ
        for key in environ:
            name = _field_names[key]
            if name:
                yield name
        for name, key in _UNPREFIXED.items():
            if environ.get(key):
                yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"EnvironHeaders({dict(self.items())!r})"


PrincipalHook = Callable[[dict[str, Any]], "str | None"]


def remote_user(environ: dict[str, Any]) -> str | None:
    """The default principal hook: the user a host framework or proxy authenticated (``REMOTE_USER``)."""
    return environ.get("REMOTE_USER") or None


#: Where WSGI servers put the client's socket in the environ: minimcp's own server (its bridge;
#: minimcp's gunicorn worker class serves through it), gunicorn's workers, werkzeug's development server.
SOCKET_KEYS = ("minimcp.httpd.socket", "gunicorn.socket", "werkzeug.socket")


def hangup_watcher(environ: Mapping[str, Any]) -> Callable[[Callable[[], None]], Unwatch] | None:
    """How to watch the client of the request ``environ`` describes for a hang-up (``HANGUPS``): a
    function taking the callback and returning the ``unwatch``; ``None`` when the server hands the
    app no socket, or the system cannot watch one."""
    if not CAN_WATCH:
        return None
    for key in SOCKET_KEYS:
        sock = environ.get(key)
        if isinstance(sock, socket.socket):
            return functools.partial(HANGUPS.watch, sock)
    return None


def read_body(environ: dict[str, Any], limit: int) -> bytes | None:
    """The request body, or ``None`` when it is over ``limit``."""
    value = environ.get("CONTENT_LENGTH", "")
    if value.isdigit():
        length = int(value)
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
    request.max_content_length = limit + 1
    try:
        return request.get_data(cache=False)
    except RequestEntityTooLarge:
        return None


def exchange_request(environ: dict[str, Any], path: str, headers: EnvironHeaders, principal: str | None,
                     head: Head | None = None, limit: int | None = None) -> HTTPRequest:
    """The exchange's view of a WSGI request made by ``principal``, to ``path``, with ``headers``
    (and their ``head``, when already read). A body whose ``Content-Length`` is within ``limit`` is
    read here, as the exchange would read it at once; any other (too long, chunked, no limit given)
    is left for the exchange to read, or refuse, once the headers have passed."""
    length = environ.get("CONTENT_LENGTH", "")
    body: bytes | Callable[[int], bytes | None] = (
        read_body(environ, limit) or b"" if limit is not None and length.isdigit() and int(length) <= limit
        else functools.partial(read_body, environ))
    return HTTPRequest(environ["REQUEST_METHOD"], path, headers, body, principal=principal,
                       access_token=environ.get(ACCESS_TOKEN_KEY), client_address=environ.get("REMOTE_ADDR") or None,
                       holds_streams=environ.get("wsgi.multithread", True),
                       multiprocess=bool(environ.get("wsgi.multiprocess")), native=functools.partial(Request, environ),
                       watch_hangup=hangup_watcher(environ), head=head or headers.head())


class WSGIOptionKeywords(HTTPKeywords, AuthKeywords, total=False):
    """The keywords ``MCPWSGIApp`` builds its ``HTTPOptions`` and ``AuthOptions`` from; the path is
    ``streamable_http_path``, the official name."""

    streamable_http_path: str


class WSGIAppKeywords(WSGIOptionKeywords, total=False):
    """Every keyword of ``wsgi_app()``: ``MCPWSGIApp``'s."""

    http: HTTPOptions | None
    auth_options: AuthOptions | None
    principal: PrincipalHook | None
    debug: bool
    pin_cpu: bool | None


#: The one ``HTTPOptions`` field ``MCPWSGIApp`` takes by another name.
_PATH_KEYWORD = {"streamable_http_path": "path"}


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

    ``http`` is what the endpoint serves and how much it may hold (``HTTPOptions``: the path,
    JSON or SSE answers, sessions, keepalives, the event store, the bounds), or each of its fields
    as a keyword (``json_response=True``; the path is ``streamable_http_path``). The object is
    handed whole to the exchange behind the app.

    ``principal`` is the one place the caller's identity is read: a function of the WSGI environ
    returning a stable user id, or ``None`` for an anonymous caller. The default reads
    ``REMOTE_USER``; an authorization layer replaces it (the bearer token's subject, say). What it
    returns binds legacy sessions (another principal presenting the id finds no session) and
    sealed ``requestState``, and handlers see it as ``ctx.request_context.transport.principal``.

    ``auth_options`` (``AuthOptions``), or its fields ``auth``, ``token_verifier`` and
    ``auth_server_provider`` as keywords, protect the endpoint (the server's own by default, see
    ``MCPServer(auth=...)``): every request to it must carry a bearer token the
    verifier accepts, the principal becomes the token's holder, and the metadata and (with a
    provider) authorization-server routes are served beside it.

    ``pin_cpu`` keeps the serving process's threads on one CPU, as ``mcp.run`` keeps its own (they
    take turns at the GIL, and a turn passed between cores costs more than a small request: under
    gunicorn's gthread worker, on two cores, half the CPU per call and twice the calls/s). The
    default, ``None``, pins on the first request under a threaded gunicorn, waitress or granian,
    servers that run their process for this app; ``True`` under any threaded server; ``False``
    never (for tools doing heavy work outside the GIL, or a host process with parallel work of its
    own). See ``minimcp.httpd.affinity.ProcessPin``.

    ``debug=True`` is the official ``streamable_http_app(debug=True)`` (Starlette's debug mode): a
    custom route that raises answers 500 with its traceback as plain text instead of a bare
    "Internal Server Error". The traceback is logged either way. For an interactive debugger, wrap
    the app in ``werkzeug.debug.DebuggedApplication`` (development only: it can run code).
    """


    def __init__(
        self,
        server: ServedServer,
        *,
        http: HTTPOptions | None = None,
        auth_options: AuthOptions | None = None,
        principal: PrincipalHook | None = None,
        debug: bool = False,
        pin_cpu: bool | None = None,
        **options: Unpack[WSGIOptionKeywords],
    ) -> None:
        keywords: dict[str, Any] = dict(options)
        #: What the endpoint serves and how much it may hold, shared with the exchange.
        self.http = gather("MCPWSGIApp", "http", http, HTTPOptions, keywords, _PATH_KEYWORD)
        auth_options = gather("MCPWSGIApp", "auth_options", auth_options, AuthOptions, keywords)
        refuse_unknown("MCPWSGIApp", keywords, keyword_names(WSGIAppKeywords),
                       "a server's own options (max_workers=, backend=, ...) go to its constructor", _PATH_KEYWORD)
        self.server = server
        self.cpu_pin = ProcessPin(pin_cpu)
        self.debug = debug
        protection: ProtectedResource | None = None
        if not auth_options.given and server.hooks.auth_options is not None:
            auth_options = server.hooks.auth_options
        if auth_options.given:
            from minimcp.server.auth.resource_server import ProtectedResource, check_auth_options

            auth, token_verifier, provider = auth_options.auth, auth_options.token_verifier, auth_options.auth_server_provider
            check_auth_options(auth, token_verifier, provider, exclusive=False)
            if auth is not None:
                protection = ProtectedResource(auth, token_verifier, provider, server.hooks.list_tool_scopes())
        self.exchange = Exchange(server, http=self.http, auth=protection)
        self.path = self.exchange.path
        self.sessions = self.exchange.sessions
        self.max_request_body_size = self.http.max_request_body_size
        self.auth = protection
        #: path -> method -> (handler, whether Host and Origin are checked). Keyed by both, so two
        #: routes on one path with different methods are both served; the later of two routes for
        #: the same path and method replaces the earlier one.
        self._routes: dict[str, dict[str, tuple[Callable[[Request], Any], bool]]] = {}
        for path, methods, fn, protected in server.custom_routes:
            self._add_route(path, methods, fn, protected)
        if protection is not None:
            # Unchecked: browser-based clients on other origins call them (they answer CORS).
            for path, methods, fn in protection.routes:
                self._add_route(path, methods, fn, False)
        self.principal: PrincipalHook = principal or (protection.principal if protection is not None else remote_user)
        #: What a request enters: the app itself, inside the WSGI middleware ``add_middleware`` added.
        self._entry: Callable[[dict[str, Any], Any], Any] = self._routed

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if self.cpu_pin.pending:
            self.cpu_pin.touch(environ)
        return self._entry(environ, start_response)

    def _routed(self, environ: dict[str, Any], start_response: Any) -> Any:
        answer = self._route(environ)
        if isinstance(answer, HTTPResponse):  # the server closes its body when the client leaves
            start_response(errors.STATUS_LINES[answer.status], answer.headers)
            return answer.body
        return answer(environ, start_response)

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
        self.cpu_pin.release()
        self.exchange.close()
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
        """What answers this request: the exchange's ``HTTPResponse``, or a custom route's WSGI response."""
        path = "/" + environ.get("PATH_INFO", "").strip("/")
        method = environ["REQUEST_METHOD"]
        if path != self.path:
            by_method = self._routes.get(path)
            if by_method is None:
                return refusal_response(errors.NotFound())
            route = by_method.get(method)
            if route is None and method == "HEAD":
                route = by_method.get("GET")  # a GET route answers HEAD too, as HTTP asks of it
            if route is None:
                allowed = sorted({*by_method, "HEAD"} if "GET" in by_method else by_method)
                return refusal_response(errors.MethodNotAllowed(", ".join(allowed)))
            handler, protected = route
        else:
            protected, handler = True, None
        headers = EnvironHeaders(environ)
        head = headers.head()
        if handler is None and self.auth is None:
            # An open endpoint knows its caller without the guard's verdict: the request is made whole
            # first, then the Host/Origin verdict is asked, and the exchange gets the request (or
            # answers the refusal).
            request = exchange_request(environ, path, headers, self.principal(environ), head,
                                       self.exchange.max_request_body_size)
            verdict = self.exchange.security.refusal(head.host, head.origin)
            return self.exchange.serve(request) if verdict is None else self.exchange.refuse(verdict, head)
        refused = self.exchange.guard(head) if protected else None
        if refused is not None:
            return refused
        if handler is not None:
            return self._custom(handler, environ, path)
        if self.auth is not None:
            try:
                self.auth.authenticate(environ)  # leaves the token where the principal hook reads it
            except AuthChallenge as challenge:
                return challenge_response(challenge, self.auth)
        return self.exchange.serve(exchange_request(environ, path, headers, self.principal(environ), head,
                                                    self.exchange.max_request_body_size))

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
                return plain_response(traceback.format_exc(), errors.RouteFailed.status)
            return refusal_response(errors.RouteFailed(str(failure) if isinstance(failure, RouteResponseError) else None))

