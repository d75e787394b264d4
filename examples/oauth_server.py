"""An MCP server that is its own OAuth 2.1 authorization server, in one process.

    python examples/oauth_server.py            # http://localhost:8000/mcp, log in as demo / demo

The authorization-server half (``auth_server_provider=``) serves its metadata, ``/register``,
``/authorize``, ``/token`` and ``/revoke``; the provider below keeps clients, codes and tokens in
memory and asks the user to log in on a tiny page. The resource-server half protects ``/mcp``:
every call needs a token this server issued, for this server (``validate_token_resource``), with
the ``mcp:tools`` scope; ``reset_counter`` also needs ``mcp:admin``, which a client gets by
re-authorizing when the 403 says so, and only for an admin (demo is one; guest / guest is not).

Any OAuth-capable MCP client completes the flow on its own: the 401 points it at the
protected-resource metadata, which points it here. ``--client REDIRECT_URI`` also registers a
public client ``demo-client`` ahead of time, for tools that do not register themselves.

In production, keep the provider's state in a database and the login behind your real user store,
or leave tokens to an identity provider you already run (see ``JWTVerifier`` in the documentation's
"Protecting a server", docs/how-to/protect.md).
"""

from __future__ import annotations

import argparse
import html
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Any

from pydantic import AnyUrl
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.middleware.auth_context import get_access_token
from minimcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from minimcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPES = ["mcp:tools", "mcp:admin"]
#: The scope only the provider's admins may grant; anyone else who asks gets the rest.
ADMIN_SCOPE = "mcp:admin"
ACCESS_TOKEN_LIFETIME = 3600
CODE_LIFETIME = 300
#: How long a sign-in link waits for the login, and how many may wait at once (the oldest go).
LOGIN_LIFETIME = 600
MAX_WAITING = 1000
#: Anyone may register: how many clients no user signed in through are kept, and for how long.
MAX_UNUSED_CLIENTS = 1000
UNUSED_CLIENT_LIFETIME = 24 * 3600
LOGIN_PAGE = """<!doctype html>
<title>Sign in</title>
<h1>Sign in to {server}</h1>
<p><b>{client}</b> asks for: {scopes}</p>
<form method="post" action="{action}">
  <input type="hidden" name="request" value="{request}">
  <label>User <input name="username" value="demo" autofocus></label>
  <label>Password <input name="password" type="password"></label>
  <button>Sign in</button>
</form>
<p>{error}</p>
"""


class InMemoryProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Clients, codes and tokens in dictionaries; the user store is ``users`` (name -> password),
    and ``admins`` the users who may grant ``mcp:admin``.

    ``authorize`` parks the request under a random id and sends the browser to the login page; a
    correct login turns it into a code and redirects back to the client with ``code``, ``state``
    and ``iss`` (RFC 9207), which the metadata advertises.

    Every sign-in starts a token family: the tokens a code bought and every pair rotated from them.
    Refresh rotates (the old refresh token and its access token die); a rotated refresh token
    presented again, or a spent code, revokes the whole family (OAuth 2.1 §6.1, RFC 6749 §4.1.2):
    one of the two parties using it is a thief. A refresh token starts with its family's id, so a
    rotated one finds its family without the spent tokens being kept.

    Everything an anonymous caller can create is bounded and expires: registrations no user signed
    in through (``MAX_UNUSED_CLIENTS``, ``UNUSED_CLIENT_LIFETIME``) and sign-in links waiting for
    a login (``MAX_WAITING``, ``LOGIN_LIFETIME``); ``max_unused_clients``, ``max_waiting`` and
    ``clock`` (the time they are measured by) change them.
    """

    authorization_response_iss_parameter_supported = True

    def __init__(self, issuer: str, resource: str, users: dict[str, str], admins: Collection[str] = (), *,
                 max_unused_clients: int = MAX_UNUSED_CLIENTS, max_waiting: int = MAX_WAITING,
                 clock: Callable[[], float] = time.time) -> None:
        self.issuer = issuer
        self.max_unused_clients = max_unused_clients
        self.max_waiting = max_waiting
        self.resource = resource
        self.users = users
        self.admins = set(admins)
        self._clock = clock
        # _lock guards every dictionary below (one request thread each may touch them at once).
        self._lock = threading.Lock()
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self._unused: OrderedDict[str, float] = OrderedDict()  # client id -> registered at, oldest first
        self._waiting: OrderedDict[str, tuple[float, str, AuthorizationParams]] = OrderedDict()  # id -> expiry, ...
        self._codes: dict[str, AuthorizationCode] = {}
        self._spent_codes: dict[str, tuple[str, float]] = {}  # spent code -> (its family, its expiry)
        self._access: dict[str, AccessToken] = {}
        self._refresh: dict[str, RefreshToken] = {}
        self._families: dict[str, set[str]] = {}  # family id -> its live tokens, access and refresh
        self._pair: dict[str, str] = {}  # refresh token -> its access token

    # --- clients ---------------------------------------------------------------------------------
    def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        with self._lock:
            self._forget_expired(self._clock())
            return self.clients.get(client_id)

    def register_client(self, client_info: OAuthClientInformationFull) -> None:
        now = self._clock()
        with self._lock:
            self._forget_expired(now)
            while len(self._unused) >= self.max_unused_clients:
                del self.clients[self._unused.popitem(last=False)[0]]
            self.clients[client_info.client_id] = client_info
            self._unused[client_info.client_id] = now

    def provision_client(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a client the operator registered ahead of time: it never expires as an unused one."""
        with self._lock:
            self.clients[client_info.client_id] = client_info

    def _forget_expired(self, now: float) -> None:
        """Drop the unused registrations, waiting sign-ins and codes whose time is up (under _lock)."""
        while self._unused and next(iter(self._unused.values())) + UNUSED_CLIENT_LIFETIME <= now:
            del self.clients[self._unused.popitem(last=False)[0]]
        while self._waiting and next(iter(self._waiting.values()))[0] <= now:
            self._waiting.popitem(last=False)
        for code in [code for code, found in self._codes.items() if found.expires_at <= now]:
            del self._codes[code]
        for code in [code for code, (_, until) in self._spent_codes.items() if until <= now]:
            del self._spent_codes[code]

    # --- the browser's part ----------------------------------------------------------------------
    def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        request_id = secrets.token_urlsafe(24)
        now = self._clock()
        with self._lock:
            self._forget_expired(now)
            while len(self._waiting) >= self.max_waiting:
                self._waiting.popitem(last=False)
            self._waiting[request_id] = (now + LOGIN_LIFETIME, client.client_id, params)
        return f"{self.issuer}/login?request={request_id}"

    def login_route(self, request: Request) -> Response:
        """``GET /login`` shows the form, ``POST /login`` checks it."""
        return self.login(request) if request.method == "POST" else self.login_page(request)

    def _waiting_for(self, request_id: str) -> tuple[str, AuthorizationParams] | None:
        with self._lock:
            self._forget_expired(self._clock())
            found = self._waiting.get(request_id)
        return None if found is None else (found[1], found[2])

    def login_page(self, request: Request) -> Response:
        request_id = request.args.get("request", "")
        waiting = self._waiting_for(request_id)
        if waiting is None:
            return Response("This sign-in link has expired; start again from your MCP client.", 400)
        return self._page(request_id, waiting, "")

    def login(self, request: Request) -> Response:
        request_id = request.form.get("request", "")
        waiting = self._waiting_for(request_id)
        if waiting is None:
            return Response("This sign-in link has expired; start again from your MCP client.", 400)
        username = request.form.get("username", "")
        expected = self.users.get(username)
        if expected is None or not secrets.compare_digest(expected, request.form.get("password", "")):
            return self._page(request_id, waiting, "Wrong user name or password.")
        with self._lock:
            if self._waiting.pop(request_id, None) is None:
                return Response("This sign-in link was already used.", 400)
        client_id, params = waiting
        target = self.approve(client_id, params, username)
        return Response(status=302, headers={"Location": target, "Cache-Control": "no-store"})

    def approve(self, client_id: str, params: AuthorizationParams, subject: str) -> str:
        """Grant ``params`` to ``subject``: a fresh code, and the redirect that takes it to the client.

        The code holds the scopes asked for that ``subject`` may grant: ``mcp:admin`` only for an
        admin (RFC 6749 §3.3 lets the server issue fewer; the token response names them)."""
        asked = params.scopes or ["mcp:tools"]
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32), client_id=client_id, expires_at=self._clock() + CODE_LIFETIME,
            scopes=[scope for scope in asked if scope != ADMIN_SCOPE or subject in self.admins],
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource or self.resource, subject=subject,
        )
        with self._lock:
            self._codes[code.code] = code
            self._unused.pop(client_id, None)  # a user signed in through it: the registration stays
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state, iss=self.issuer)

    def _page(self, request_id: str, waiting: tuple[str, AuthorizationParams], error: str) -> Response:
        client = self.get_client(waiting[0])
        body = LOGIN_PAGE.format(
            server=html.escape(self.resource), client=html.escape(client.client_name or client.client_id if client
                                                                 else waiting[0]),
            scopes=html.escape(" ".join(waiting[1].scopes or ["mcp:tools"])), action=f"{self.issuer}/login",
            request=html.escape(request_id), error=html.escape(error))
        return Response(body, 401 if error else 200, content_type="text/html; charset=utf-8",
                        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})

    # --- codes and tokens ------------------------------------------------------------------------
    def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str
                                ) -> AuthorizationCode | None:
        with self._lock:
            spent = self._spent_codes.get(authorization_code)
            if spent is not None:  # a replayed code: what it bought may be in a thief's hands too
                self._revoke_family(spent[0])
                return None
            return self._codes.get(authorization_code)

    def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
                                    ) -> OAuthToken:
        family = secrets.token_urlsafe(16)
        with self._lock:
            if self._codes.pop(authorization_code.code, None) is None:  # a code works once
                raise TokenError("invalid_grant", "authorization code was already used")
            self._spent_codes[authorization_code.code] = (family, authorization_code.expires_at)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource,
                           authorization_code.subject, family)

    def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        with self._lock:
            found = self._refresh.get(refresh_token)
            family, dot, _ = refresh_token.partition(".")
            if found is None and dot:  # rotated out, yet presented again: end the family
                self._revoke_family(family)
            return found

    def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                               scopes: list[str]) -> OAuthToken:
        family = refresh_token.token.partition(".")[0]
        with self._lock:
            if self._refresh.pop(refresh_token.token, None) is None:
                self._revoke_family(family)  # a racing request rotated it first: a reuse
                raise TokenError("invalid_grant", "refresh token was already used")
            access = self._pair.pop(refresh_token.token, "")
            self._access.pop(access, None)
            self._families.get(family, set()).difference_update({refresh_token.token, access})
        return self._issue(client.client_id, scopes, refresh_token.resource, refresh_token.subject, family)

    def load_access_token(self, token: str) -> AccessToken | None:
        with self._lock:
            access = self._access.get(token)
        if access is not None and access.expires_at is not None and access.expires_at < self._clock():
            return None
        return access

    def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """RFC 7009: revoking either token of a sign-in ends the sign-in (its whole family)."""
        with self._lock:
            family = next((name for name, tokens in self._families.items() if token.token in tokens), None)
            if family is not None:
                self._revoke_family(family)

    def _revoke_family(self, family: str) -> None:
        """End every live token of ``family`` (under _lock)."""
        for token in self._families.pop(family, set()):
            self._access.pop(token, None)
            self._refresh.pop(token, None)
            self._pair.pop(token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, subject: str | None,
               family: str) -> OAuthToken:
        access = AccessToken(token=secrets.token_urlsafe(32), client_id=client_id, scopes=scopes,
                             expires_at=int(self._clock()) + ACCESS_TOKEN_LIFETIME, resource=resource,
                             subject=subject, claims={"iss": self.issuer})
        refresh = RefreshToken(token=f"{family}.{secrets.token_urlsafe(32)}", client_id=client_id, scopes=scopes,
                               resource=resource, subject=subject)
        with self._lock:
            self._access[access.token] = access
            self._refresh[refresh.token] = refresh
            self._pair[refresh.token] = access.token
            self._families.setdefault(family, set()).update({access.token, refresh.token})
        return OAuthToken(access_token=access.token, expires_in=ACCESS_TOKEN_LIFETIME, scope=" ".join(scopes),
                          refresh_token=refresh.token)


def build_server(base_url: str = "http://localhost:8000", users: dict[str, str] | None = None,
                 client_redirect_uri: str | None = None, admins: Collection[str] = ("demo",)) -> MCPServer:
    """The server at ``base_url``: authorization server at its root, MCP endpoint at ``/mcp``.
    The users are demo (an admin) and guest (who may not grant ``mcp:admin``), each with their
    name as password, unless ``users`` and ``admins`` say otherwise."""
    provider = InMemoryProvider(base_url, f"{base_url}/mcp", users or {"demo": "demo", "guest": "guest"}, admins)
    if client_redirect_uri is not None:
        provider.provision_client(OAuthClientInformationFull(
            client_id="demo-client", client_name="Pre-registered demo client", token_endpoint_auth_method="none",
            redirect_uris=[AnyUrl(client_redirect_uri)], scope=" ".join(SCOPES)))
    mcp = MCPServer(
        "OAuth demo",
        auth=AuthSettings(
            # Strings, which pydantic parses: AuthSettings keeps the issuer as spelled, where an
            # AnyHttpUrl built here would have gained a trailing "/" (the issuer must match exactly).
            issuer_url=base_url,  # type: ignore[arg-type]
            resource_server_url=f"{base_url}/mcp",  # type: ignore[arg-type]
            validate_token_resource=True,
            required_scopes=["mcp:tools"],
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES,
                                                                  default_scopes=SCOPES),
            revocation_options=RevocationOptions(enabled=True),
        ),
        auth_server_provider=provider,
    )
    mcp.custom_route("/login", ["GET", "POST"])(provider.login_route)
    counter = {"value": 0}
    counter_lock = threading.Lock()  # guards counter: tools run on several worker threads at once

    @mcp.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the server thinks is calling: the token's user, client and scopes."""
        token = ctx.access_token
        if token is None:  # only in memory or over stdio: over HTTP every call carries a token
            return {"user": None, "client_id": None, "scopes": []}
        return {"user": token.subject, "client_id": token.client_id, "scopes": token.scopes}

    @mcp.tool()
    def increment() -> int:
        """Add one to the shared counter."""
        with counter_lock:
            counter["value"] += 1
            return counter["value"]

    @mcp.tool(required_scopes=["mcp:admin"])
    def reset_counter() -> str:
        """Set the counter back to zero (needs the mcp:admin scope)."""
        with counter_lock:
            counter["value"] = 0
        token = get_access_token()
        return f"reset by {token.subject if token is not None else 'a caller without a token'}"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="localhost", help="the host name clients use; it is the issuer's")
    parser.add_argument("--client", metavar="REDIRECT_URI", help="pre-register the public client 'demo-client'")
    options = parser.parse_args()
    mcp = build_server(f"http://{options.host}:{options.port}", client_redirect_uri=options.client)
    mcp.run(transport="streamable-http", host="127.0.0.1", port=options.port)


if __name__ == "__main__":
    main()
