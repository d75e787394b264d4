"""What ``minimcp.flask`` and ``minimcp.django`` share: an MCP server that lives inside a web application.

A standalone ``MCPServer`` owns its HTTP endpoint and knows nobody. A hosted one is reached through
a view of the host application, so the host's middleware, hooks and login run first, and three
things follow from that:

- **who is calling.** The view forwards the request to the MCP endpoint with the host's logged-in
  user as ``REMOTE_USER``: that principal binds legacy sessions (another user presenting the
  session id finds no session) and sealed ``requestState``. ``ctx.user`` is the user object.
- **where user code runs.** Tools, resolvers, resources and prompts run on worker threads; the
  host's ``call_scope`` re-establishes its context there (Flask's app and request contexts,
  Django's database connection hygiene) around every call.
- **what a user may use.** ``@mcp.tool(allowed=rule)`` limits a tool to the signed-in users ``rule``
  admits: the others, and a caller with no user, do not see it in ``tools/list``, and a call is
  refused with a clear error that names the tool and what it requires, never the user.

This module knows no framework; each host module adapts it to its own request and user objects.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar
from urllib.parse import urlsplit

from pydantic import AnyHttpUrl

from minimcp.jsonrpc import MCPError
from minimcp.server import MCPServer
from minimcp.server.auth.routes import validate_issuer_url
from minimcp.server.transport_security import TransportSecuritySettings
from minimcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult
from minimcp.types import Tool as ToolDefinition

if TYPE_CHECKING:
    from werkzeug.wrappers import Response

F = TypeVar("F", bound=Callable[..., Any])

#: A rule that decides whether a user may use a tool; it receives the host's user (or ``None``).
AccessRule = Callable[[Any], bool]


@dataclass(frozen=True)
class Access:
    """Who may use one tool: ``rule`` decides, ``requirement`` says in words what it asks for."""

    rule: AccessRule
    requirement: str


class HostedServer(MCPServer):
    """An ``MCPServer`` whose listings and calls depend on the host application's user.

    Subclasses say who the user is (``host_user``, on the request thread and on the worker) and
    how a call enters the host's context (``call_scope``).
    """

    def __init__(self, name: str | None = None, **options: Any) -> None:
        super().__init__(name, **options)
        self._access: dict[str, Access] = {}  # written at registration, before serving; read-only after

    @property
    def listings_vary_by_user(self) -> bool:  # type: ignore[override]
        return bool(self._access)

    # --- registering ---------------------------------------------------------------------------
    def tool(self, name: str | None = None, *, allowed: AccessRule | None = None,
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

    # --- using ---------------------------------------------------------------------------------
    def may_use(self, tool: str, user: Any) -> bool:
        """A rule speaks about the site's users (``user.is_admin``): nobody is never one of them,
        so a limited tool is denied to a caller with no user without asking its rule."""
        access = self._access.get(tool)
        return access is None or (principal_of(user) is not None and bool(access.rule(user)))

    def list_tools(self) -> list[ToolDefinition]:
        user = self.host_user()
        return [tool for tool in super().list_tools() if self.may_use(tool.name, user)]

    def call_tool(self, name: str, arguments: dict[str, Any] | None,
                  context: Any = None) -> CallToolResult | InputRequiredResult:
        user = self.host_user()
        if not self.may_use(name, user):
            access = self._access[name]
            why = "" if principal_of(user) is not None else "; sign in first"
            raise MCPError(INVALID_PARAMS, f"Permission denied: tool '{name}' requires {access.requirement}{why}",
                           {"tool": name, "requires": access.requirement})
        return super().call_tool(name, arguments, context)

    # --- the endpoint --------------------------------------------------------------------------
    def endpoint(self, **options: Any) -> Any:
        """The MCP WSGI application a host view forwards to; the host checks Host and Origin itself."""
        options.setdefault("transport_security", TransportSecuritySettings(enable_dns_rebinding_protection=False))
        return self.wsgi_app(streamable_http_path="/", **options)


def origin_allowed(environ: dict[str, Any], extra: Sequence[str]) -> bool:
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


@dataclass
class Forwarded:
    """The MCP endpoint's answer, for the host to wrap in its own response class."""

    status: int
    headers: list[tuple[str, str]]
    body: Iterable[bytes]


def forward(app: Any, environ: dict[str, Any], body: bytes, principal: str | None) -> Forwarded:
    """Hand one host request to the MCP endpoint ``app`` as the user ``principal`` (``None``: nobody)."""
    inner = dict(environ)
    inner["PATH_INFO"] = "/"
    inner["SCRIPT_NAME"] = ""
    inner["wsgi.input"] = io.BytesIO(body)
    inner["CONTENT_LENGTH"] = str(len(body))
    inner.pop("HTTP_TRANSFER_ENCODING", None)
    inner.pop("REMOTE_USER", None)
    if principal is not None:
        inner["REMOTE_USER"] = principal
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        started[:] = [int(status.split(" ", 1)[0]), headers]

    answer = app(inner, start_response)
    return Forwarded(started[0], list(started[1]), answer)


def principal_of(user: Any) -> str | None:
    """The string that identifies ``user`` to minimcp: its ``get_id()`` (Flask-Login), its ``pk``
    (Django), or the string itself; ``None`` for nobody or an anonymous user."""
    if user is None or not getattr(user, "is_authenticated", True):
        return None
    if isinstance(user, str):
        return user
    get_id = getattr(user, "get_id", None)
    if callable(get_id):
        return str(get_id())
    pk = getattr(user, "pk", None)
    return str(pk if pk is not None else user)


def unauthorized(realm: str, challenge: str | None = None, ways: Sequence[str] = ()) -> Forwarded:
    """The 401 a client gets before it signs in; ``challenge`` replaces the plain ``Bearer realm``
    when the site is its own authorization server (it says where the client signs in). ``ways``
    are the ways in that this site offers, in words: the person who reads the error learns what
    to do, and is never offered what the site cannot issue."""
    offered = "; or ".join(ways) if ways else "sign in to this site"
    message = f"Authentication required to use this site's MCP endpoint: {offered}"
    text = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}).encode()
    return Forwarded(401, [("Content-Type", "application/json"), ("Content-Length", str(len(text))),
                           ("WWW-Authenticate", challenge or f'Bearer realm="{realm}"')], [text])


#: The ways in, as ``unauthorized`` words them.
SIGN_IN_WITH_CLIENT = "let your MCP client sign you in (it opens this site's login page)"


def api_token_way(command: str) -> str:
    """How to use an API token, and how one is issued on this site (``command``)."""
    return f"send 'Authorization: Bearer <API token>', a token the site issues with '{command}'"


def sign_in_unavailable(issuer: str) -> Forwarded | None:
    """Why this site cannot be an authorization server at ``issuer``, as a 400, or ``None`` when it can.

    RFC 8414 wants an HTTPS issuer (plain http on loopback, for development). A request over plain
    http under a public name, or with a ``Host`` that makes no URL, cannot have its sign-in
    documents built: that is the request's or the deployment's problem, and it is said so, never
    answered with a 500.
    """
    if not urlsplit(issuer).hostname:  # werkzeug drops a Host header that is not a host name
        return _plain(400, b"The request's Host header names no host this site's MCP sign-in can live at.")
    try:
        validate_issuer_url(AnyHttpUrl(issuer))
    except ValueError:
        return _plain(400, b"Signing in to this site's MCP endpoint needs HTTPS (plain http only on localhost). "
                           b"Behind a proxy that ends TLS, the site must be told the original scheme and host.")
    return None


def for_the_asker_only(reply: Response) -> Response:
    """A sign-in document built from the request's ``Host``: the asker's to keep, never a shared
    cache's, which could hand one that a forged ``Host`` (or ``X-Forwarded-Host``) built to others."""
    if reply.cache_control.public:
        reply.cache_control.public = False
        reply.cache_control.private = True
        reply.vary.add("Host")
    return reply


def forbidden_origin() -> Forwarded:
    return _plain(403, b"Invalid Origin header")


def too_large() -> Forwarded:
    return _plain(413, b"Request body too large")


def _plain(status: int, text: bytes) -> Forwarded:
    return Forwarded(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(text)))],
                     [text])
