"""What ``minimcp.flask`` and ``minimcp.django`` share: an MCP server that lives inside a web application.

A standalone ``MCPServer`` owns its HTTP endpoint and knows nobody. A hosted one is reached through
a view of the host application, so the host's middleware, hooks and login run first, and three
things follow from that:

- **who is calling.** The view hands the request to the MCP endpoint (the sans-I/O exchange,
  ``host_request``) with the host's logged-in user as its principal, a key of the user that is the
  same on every request (``principal_of``): that principal binds legacy sessions (another user
  presenting the session id finds no session) and sealed ``requestState``. ``ctx.user`` is the
  user object, ``ctx.request`` the host's own request.
- **where user code runs.** Tools, resolvers, resources and prompts run on worker threads; the
  host's ``call_scope`` gives each call its own context there (Flask's app and request contexts,
  Django's database connection hygiene), never an object another thread opened.
- **which names it answers.** A host checks ``Host`` and ``Origin`` itself (``rebinding_refusal``),
  with the names the site configures, as minimcp's own server does with ``transport_security``.
- **what a user may use.** ``@mcp.tool(allowed=rule)`` limits a tool to the signed-in users ``rule``
  admits: the others, and a caller with no user, do not see it in ``tools/list``, and a call is
  refused with a clear error that names the tool and what it requires, never the user.
  ``mcp.allow("billing_*", allowed=rule)`` puts the same rule on every tool whose name matches,
  the tools of a server mounted in the host included (a proxy's upstream tools: ``mcp.mount(
  create_proxy(...))``); a mounted server's ``ctx.user`` and a proxy's per-user credentials see
  the host's user (``MCPServer.host_user``).

This module knows no framework; each host module adapts it to its own request and user objects.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Callable, TypeVar
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import AnyHttpUrl
from typing_extensions import Unpack

from minimcp.jsonrpc import MCPError
from minimcp.server.app.server import MCPServer
from minimcp.server.auth.routes import validate_issuer_url
from minimcp.server.core.options import gather, keyword_names, refuse_unknown
from minimcp.server.edges.http import errors
from minimcp.server.edges.http.exchange import Exchange, HTTPRequest, HTTPResponse, content, refusal_response
from minimcp.server.edges.http.options import HTTPKeywords, HTTPOptions
from minimcp.server.edges.http.security import TransportSecuritySettings, host_allowed
from minimcp.server.edges.wsgi import EnvironHeaders, hangup_watcher
from minimcp.types import INTERNAL_ERROR, INVALID_PARAMS
from minimcp.types import Tool as ToolDefinition

if TYPE_CHECKING:
    from werkzeug.wrappers import Response

    from minimcp.server.app.tools import Tool

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger(__name__)

#: A rule that decides whether a user may use a tool; it receives the host's user (or ``None``).
AccessRule = Callable[[Any], bool]


@dataclass(frozen=True)
class Access:
    """Who may use one tool: ``rule`` decides, ``requirement`` says in words what it asks for."""

    rule: AccessRule
    requirement: str


#: The options that make an ``MCPServer`` check bearer tokens itself.
_BEARER_OPTIONS = ("auth", "token_verifier", "auth_server_provider")


class HostedServer(MCPServer):
    """An ``MCPServer`` whose listings and calls depend on the host application's user.

    Subclasses say who the user is (``host_user``, on the request thread and on the worker) and
    how a call enters the host's context (``call_scope``).
    """

    def __init__(self, name: str | None = None, *, principal: Callable[[Any], Any] | None = None,
                 **options: Any) -> None:
        given = [option for option in _BEARER_OPTIONS if options.get(option) is not None]
        if given:
            # The host's login (and its API tokens, or oauth=True) says who calls; a bearer check
            # the endpoint would not run must not look configured.
            raise TypeError(f"{type(self).__name__} takes no {', '.join(given)}: a hosted endpoint's callers are the "
                            "site's users, signed in by the host (its login, API tokens, or oauth=True). For tokens "
                            "from another authorization server, serve an MCPServer(auth=...) with its own wsgi_app()")
        super().__init__(name, **options)
        # Both written at registration (tool, allow), before serving; read-only after.
        self._access: dict[str, Access] = {}
        self._patterns: list[tuple[str, Access]] = []
        self._principal = principal

    def principal_of(self, user: Any) -> str | None:
        """Who ``user`` is to minimcp: ``principal(user)`` when the site gave one, else the user's
        own stable key (:func:`principal_of`); ``None`` for nobody."""
        if self._principal is None or user is None or not getattr(user, "is_authenticated", True):
            return principal_of(user)
        return _key(self._principal(user), user)

    @property
    def listings_vary_by_user(self) -> bool:  # type: ignore[override]
        return bool(self._access or self._patterns)

    # --- registering ---------------------------------------------------------------------------
    # MCPServer.tool's options are passed on by keyword only, hence the narrower signature
    def tool(self, name: str | None = None, *, allowed: AccessRule | None = None,  # type: ignore[override]
             **options: Any) -> Callable[[F], F]:
        """Register a tool: ``@mcp.tool()``; ``allowed=lambda user: ...`` limits who sees and calls it."""
        if callable(name):
            raise TypeError("The @tool decorator was used incorrectly. Did you forget to call it? "
                            "Use @tool() instead of @tool")

        def decorator(fn: F) -> F:
            self.add_tool(fn, name, allowed=allowed, **options)
            return fn

        return decorator

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, *,  # type: ignore[override]
                 allowed: AccessRule | None = None, requirement: str | None = None, **options: Any) -> None:
        super().add_tool(fn, name, **options)
        if allowed is not None:
            self._access[name or fn.__name__] = Access(allowed, requirement or "a rule of this site")

    def allow(self, pattern: str, allowed: AccessRule, requirement: str | None = None) -> None:
        """Limit every tool whose name matches ``pattern`` (``fnmatch``: ``"billing_*"``, or a name)
        to the users ``allowed`` admits, as ``@mcp.tool(allowed=...)`` does for one: the tools of
        servers mounted here too, under the names this server serves them by (a proxy's upstream
        tools, ``billing_refund``), whenever they appear. Every rule that matches a tool must
        admit the user. Call it before serving, as you register tools."""
        self._patterns.append((pattern, Access(allowed, requirement or "a rule of this site")))

    # --- using ---------------------------------------------------------------------------------
    def refusal(self, tool: str, user: Any) -> Access | None:
        """The first rule on ``tool`` that does not admit ``user``, ``None`` when all do (or none
        speaks of it). A rule speaks about the site's users (``user.is_admin``): nobody is never
        one of them, so a limited tool is denied to a caller with no user without asking its rule."""
        exact = self._access.get(tool)
        rules = [exact] if exact is not None else []
        rules += [access for pattern, access in self._patterns if fnmatch.fnmatchcase(tool, pattern)]
        if rules and self.principal_of(user) is None:
            return rules[0]
        return next((access for access in rules if not access.rule(user)), None)

    def may_use(self, tool: str, user: Any) -> bool:
        return self.refusal(tool, user) is None

    def list_tools(self) -> list[ToolDefinition]:
        user = self.host_user()
        return [tool for tool in super().list_tools() if self.may_use(tool.name, user)]

    def _tool_to_call(self, name: str, context: Any, tool: Tool | None = None) -> Tool:
        """The tool, for ``call_tool`` and a served call alike, once the host's rule admits the user
        (a served call then keeps ``MCPServer``'s cheaper route for its result)."""
        user = self.host_user()
        access = self.refusal(name, user)
        if access is not None:
            why = "" if self.principal_of(user) is not None else "; sign in first"
            raise MCPError(INVALID_PARAMS, f"Permission denied: tool '{name}' requires {access.requirement}{why}",
                           {"tool": name, "requires": access.requirement})
        return super()._tool_to_call(name, context, tool)

    # --- the endpoint --------------------------------------------------------------------------
    def endpoint(self, http: HTTPOptions | Mapping[str, Any] | None = None, **options: Unpack[HTTPKeywords]) -> Exchange:
        """The MCP endpoint a host view hands its requests to (``host_request``), configured by
        ``http`` (the host's ``http_options``: an ``HTTPOptions``, or its fields by name) or by the
        fields as keywords. Its path is the host's route, and unless told otherwise
        (``transport_security``) it checks no Host or Origin: the host checks them itself
        (``rebinding_refusal``, with its own names), and its own login says who is calling."""
        owner = f"{type(self).__name__}.endpoint"
        keywords: dict[str, Any] = dict(options)
        if http is not None and not isinstance(http, HTTPOptions):
            keywords, http = {**http, **keywords}, None
        if "path" in keywords:
            raise TypeError(f"{owner}() takes no path: the endpoint answers where the host routes it")
        http = gather(owner, "http", http, HTTPOptions, keywords)
        refuse_unknown(owner, keywords, keyword_names(HTTPKeywords))
        security = http.transport_security or TransportSecuritySettings(enable_dns_rebinding_protection=False)
        return Exchange(self._lowlevel_server, http=dataclasses.replace(http, path="/", transport_security=security))


def origin_allowed(environ: Mapping[str, Any], extra: Sequence[str]) -> bool:
    """A browser's ``Origin`` must be this site itself or one the host listed; other clients send none.

    The endpoint authenticates by the host's login, often a session cookie, so a page on another
    site must not be able to drive it with the visitor's cookies.
    """
    origin = environ.get("HTTP_ORIGIN")
    if not origin:
        return True
    parts = urlsplit(origin.lower())
    own = f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '')}".lower()
    return f"{parts.scheme}://{parts.netloc}" == own or origin.lower().rstrip("/") in {o.lower().rstrip("/") for o in extra}


def rebinding_refusal(environ: Mapping[str, Any], allowed_hosts: Sequence[str], allowed_origins: Sequence[str],
                      how: str) -> HTTPResponse | None:
    """DNS-rebinding protection of a hosted endpoint, as minimcp's own server has it
    (``transport_security``): the 421 of a ``Host`` that is neither loopback nor one of
    ``allowed_hosts`` (``"name"``, ``"name:port"``, ``"name:*"``), the 403 of a foreign
    ``Origin``; ``None`` when the request may go on.

    A page of a hostile site can make its own name resolve to this server: its requests then carry
    that name as ``Host`` and its own origin, which is "this site itself" by ``Origin`` alone, so
    a site with no login (or a login by cookie) would run tools for it. ``how`` says how this host
    allows a name, for the operator who reads the refusal.
    """
    host = environ.get("HTTP_HOST")
    settings = TransportSecuritySettings()  # loopback names, on any port
    settings.allowed_hosts += [name.lower() if ":" in name else f"{name.lower()}:*" for name in allowed_hosts]
    if not host_allowed(settings, host):
        return refusal_response(errors.InvalidHost(
            f"Invalid Host header {host!r}: this site's MCP endpoint answers only the names it was told are "
            f"its own ({how})"))
    if not origin_allowed(environ, allowed_origins):
        return forbidden_origin()
    return None


def host_request(environ: Mapping[str, Any], body: bytes, principal: str | None, native: Any) -> HTTPRequest:
    """A host view's request to the endpoint, made by ``principal`` (``None``: nobody): ``environ``
    is the request's CGI-style variables (Flask's ``request.environ``, Django's ``request.META``),
    ``native`` the host's own request object, which handlers see as ``ctx.request``. Under a WSGI
    server that hands the app its client's socket, a 2026-07-28 call is cancelled when its client
    hangs up, as on minimcp's own server (``minimcp.server.edges.wsgi.hangup_watcher``)."""
    headers = EnvironHeaders(environ)
    return HTTPRequest(environ["REQUEST_METHOD"], "/", headers, body, principal=principal, head=headers.head(),
                       client_address=environ.get("REMOTE_ADDR") or None,
                       holds_streams=environ.get("wsgi.multithread", True),
                       multiprocess=bool(environ.get("wsgi.multiprocess")), native=lambda: native,
                       watch_hangup=hangup_watcher(environ))


def principal_of(user: Any) -> str | None:
    """The string that identifies ``user`` to minimcp, the same on every request: its ``get_id()``
    (Flask-Login), its ``pk`` (Django), its ``id``, a mapping's or row's ``"id"`` (a ``sqlite3.Row``),
    or the string itself; ``None`` for nobody or an anonymous user.

    It binds legacy sessions and sealed ``requestState``, so a key that changed between requests
    (``str()`` of an object, with its memory address) would lose every call that spans two: a user
    with no stable key is refused (``UnidentifiedUser``), and the host's ``principal=`` gives one.
    """
    if user is None or not getattr(user, "is_authenticated", True):
        return None
    if isinstance(user, (str, int, UUID)) and not isinstance(user, bool):  # an id itself
        return str(user)
    get_id = getattr(user, "get_id", None)
    if callable(get_id):
        return _key(get_id(), user)
    for attribute in ("pk", "id"):
        value = getattr(user, attribute, None)
        if value is not None and not callable(value):
            return _key(value, user)
    keys = getattr(user, "keys", None)
    if callable(keys) and "id" in keys():
        return _key(user["id"], user)
    raise UnidentifiedUser(user)


def display_name(user: Any, key: Callable[[Any], str | None] = principal_of) -> str:
    """How a page names ``user`` to that user: the name it signs in with (Django's
    ``get_username()``, a ``username``), else its ``email`` or ``name``, whether attributes or a
    row's keys, else its stable key (``key``, the host's ``principal_of``). Never ``str(user)``:
    an object without a ``__str__`` of its own would show its class and memory address."""
    get_username = getattr(user, "get_username", None)
    if callable(get_username) and get_username():
        return str(get_username())
    keys = getattr(user, "keys", None)
    fields = set(keys()) if callable(keys) and not isinstance(user, str) else set()
    for name in ("username", "email", "name"):
        value = user[name] if name in fields else getattr(user, name, None)
        if isinstance(value, str) and value:
            return value
    return key(user) or ""


def _key(value: Any, user: Any) -> str:
    if value is None or value == "":
        raise UnidentifiedUser(user)
    return str(value)


class UnidentifiedUser(TypeError):
    """The host's user has no key that stays the same from one request to the next."""

    def __init__(self, user: Any) -> None:
        super().__init__(
            f"minimcp cannot tell who this {type(user).__module__}.{type(user).__qualname__} is from one request to "
            "the next: the user your site gives it (Flask-Login's current_user, MCP(user=...)) needs a stable id, "
            "as get_id(), pk, id, or an 'id' key (a dict or sqlite3.Row), or pass principal=lambda user: <its id>")


def unauthorized(realm: str, challenge: str | None = None, ways: Sequence[str] = ()) -> HTTPResponse:
    """The 401 a client gets before it signs in; ``challenge`` replaces the plain ``Bearer realm``
    when the site is its own authorization server (it says where the client signs in). ``ways``
    are the ways in that this site offers, in words: the person who reads the error learns what
    to do, and is never offered what the site cannot issue."""
    offered = "; or ".join(ways) if ways else "sign in to this site"
    message = f"Authentication required to use this site's MCP endpoint: {offered}"
    text = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}).encode()
    return content(text, errors.UNAUTHORIZED, "application/json",
                   {"WWW-Authenticate": challenge or f'Bearer realm="{realm}"'})


#: The ways in, as ``unauthorized`` words them.
SIGN_IN_WITH_CLIENT = "let your MCP client sign you in (it opens this site's login page)"


def api_token_way(command: str) -> str:
    """How to use an API token, and how one is issued on this site (``command``)."""
    return f"send 'Authorization: Bearer <API token>', a token the site issues with '{command}'"


def sign_in_unavailable(issuer: str) -> HTTPResponse | None:
    """Why this site cannot be an authorization server at ``issuer``, as a 400, or ``None`` when it can.

    RFC 8414 wants an HTTPS issuer (plain http on loopback, for development). A request over plain
    http under a public name, or with a ``Host`` that makes no URL, cannot have its sign-in
    documents built: that is the request's or the deployment's problem, and it is said so, never
    answered with a 500.
    """
    if not urlsplit(issuer).hostname:  # werkzeug drops a Host header that is not a host name
        return refusal_response(errors.BadHostRequest(
            "The request's Host header names no host this site's MCP sign-in can live at."))
    try:
        validate_issuer_url(AnyHttpUrl(issuer))
    except ValueError:
        return refusal_response(errors.BadHostRequest(
            "Signing in to this site's MCP endpoint needs HTTPS (plain http only on localhost). "
            "Behind a proxy that ends TLS, the site must be told the original scheme and host."))
    return None


def for_the_asker_only(reply: Response) -> Response:
    """A sign-in document built from the request's ``Host``: the asker's to keep, never a shared
    cache's, which could hand one that a forged ``Host`` (or ``X-Forwarded-Host``) built to others."""
    if reply.cache_control.public:
        reply.cache_control.public = False
        reply.cache_control.private = True
        reply.vary.add("Host")
    return reply


def misconfigured(problem: Exception) -> HTTPResponse:
    """The 500 of a site whose setup keeps the endpoint from working, said to the caller in words
    (a JSON-RPC error, so an MCP client shows it) and logged for the operator."""
    logger.error("MCP endpoint refused a request: %s", problem)
    text = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": INTERNAL_ERROR, "message": str(problem)}})
    return content(text.encode(), HTTPStatus.INTERNAL_SERVER_ERROR, "application/json")


def forbidden_origin() -> HTTPResponse:
    return refusal_response(errors.InvalidOrigin())


def too_large() -> HTTPResponse:
    return refusal_response(errors.HostBodyTooLarge())
