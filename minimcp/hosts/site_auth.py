"""Sign in with the site's own login: a hosted MCP endpoint whose authorization server is the site.

A user pastes the site's MCP URL into an assistant. The assistant's first request is answered 401
with a pointer to the protected-resource metadata, which names the site itself as the
authorization server. The assistant registers (RFC 7591), sends the user's browser to
``<endpoint>/authorize``; the built-in authorization-server tier checks the request (PKCE S256,
registered redirect URI) and hands it to :class:`SiteAuthorizationServer`, which sends the browser
to the site's consent page. The host module (Flask or Django) serves that page behind the site's
own login: a visitor who is not signed in goes to the login page first and comes back. Allow
issues a one-time code bound to the signed-in user; the assistant trades it for tokens at
``<endpoint>/token``, and every MCP request carrying the access token acts as that user.

Safe by default: only S256 PKCE; codes live two minutes and work once (a second use revokes what
the first one issued, RFC 6749 §4.1.2); a refresh token works once too, and a rotated one presented
again revokes its whole family (OAuth 2.1 §6.1: every refresh token carries its grant's tag, so the
grant it came from is found without keeping the spent ones); only SHA-256 digests of codes and
tokens are stored; the pending request travels to the consent page signed with the site's secret
key, so it cannot be altered on the way, and is checked again against the client's registration
when the user answers; the consent form is the host's CSRF-protected form. Registration is
bounded (``MemoryGrantStore``; the rate per address needs a ``registration_limiter`` that lives as
long as the site).

This module knows no framework. A host gives it a :class:`GrantStore` (memory for Flask, the
project's database for Django), a :class:`Signer` built on its secret key, and the request's
base URL, and serves the consent page itself.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import AnyHttpUrl, AnyUrl
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from minimcp.server.auth.routes import (
    AUTHORIZATION_PATH,
    REGISTRATION_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    build_resource_metadata_url,
    create_auth_routes,
    create_protected_resource_routes,
)
from minimcp.server.auth.rate_limit import RateLimiter
from minimcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from minimcp.server.edges.http import errors
from minimcp.shared.auth import InvalidRedirectUriError, InvalidScopeError, OAuthClientInformationFull, OAuthToken

#: A code is traded for tokens at once by the client that asked for it; two minutes is plenty.
CODE_LIFETIME = 120
ACCESS_TOKEN_LIFETIME = 3600
REFRESH_TOKEN_LIFETIME = 30 * 24 * 3600
#: How long a consent page stays valid, the time the user may take to sign in.
CONSENT_LIFETIME = 600
#: Registration is anonymous: how many clients no user has allowed yet a store keeps, and how long.
MAX_UNUSED_CLIENTS = 1000
UNUSED_CLIENT_LIFETIME = 24 * 3600
#: How many grants the in-memory store keeps (the oldest go first).
MAX_GRANTS = 10_000
#: The site's dynamic registration: the AS tier's bounds (size, redirect URIs, rate per address).
REGISTRATIONS_PER_MINUTE = 10
REGISTRATION = ClientRegistrationOptions(enabled=True, max_registrations_per_minute=REGISTRATIONS_PER_MINUTE)
#: The AS tier's endpoints, under the MCP endpoint (the issuer), which a host routes to ``answer``.
ENDPOINT_PATHS = (AUTHORIZATION_PATH, TOKEN_PATH, REGISTRATION_PATH, REVOCATION_PATH)
#: The consent page, under the MCP endpoint too; the host serves it behind its login.
CONSENT_PATH = "/consent"
#: Where the hosts' default consent page lives (``minimcp/consent.html``): one file that Jinja and
#: Django's engine both read, given ``pending``, ``sealed``, ``site``, ``username``, ``csrf_field``
#: and ``csrf_token``.
TEMPLATES = Path(__file__).parent.parent / "templates"

GrantKey = Literal["code_digest", "access_digest", "refresh_digest"]


def digest(secret: str) -> str:
    """What is stored of a code or token: 256 random bits need no slow hash."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Grant:
    """What one user allowed one client: the code, then the tokens that replaced it (digests only)."""

    client_id: str
    subject: str
    scopes: list[str]
    resource: str | None
    redirect_uri: str
    redirect_uri_provided_explicitly: bool
    code_challenge: str
    code_digest: str
    code_expires_at: float
    code_used: bool = False
    access_digest: str | None = None
    access_expires_at: float | None = None
    refresh_digest: str | None = None
    refresh_expires_at: float | None = None


class GrantStore(Protocol):
    """Where a site keeps registered clients and grants. ``update_grant`` is a compare-and-set:
    it changes the grant found by ``key`` only while the fields in ``expected`` still hold, and
    says whether it did, so a code or refresh token raced by two requests is spent once.

    Anyone may register a client, so ``add_client`` must bound what it keeps: the clients no user
    has allowed yet (no ``add_grant`` named them) expire and are capped, as ``MemoryGrantStore``
    does with ``MAX_UNUSED_CLIENTS`` and ``UNUSED_CLIENT_LIFETIME``."""

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None: ...

    def add_client(self, client: OAuthClientInformationFull) -> None: ...

    def add_grant(self, grant: Grant) -> None: ...

    def find_grant(self, key: GrantKey, value: str) -> Grant | None: ...

    def update_grant(self, key: GrantKey, value: str, expected: dict[str, Any], changes: dict[str, Any]) -> bool: ...

    def delete_grant(self, key: GrantKey, value: str) -> None: ...


class MemoryGrantStore:
    """Clients and grants in this process's memory: they are gone when it restarts (users sign in
    again). A site served by several processes needs a shared store instead.

    Bounded, because anyone may register: a client no user has allowed yet is kept for
    ``unused_client_lifetime`` seconds, and at most ``max_unused_clients`` of them (a new one
    pushes out the oldest); a client someone allowed stays. A grant goes once it is dead (its code
    expired unused, or its tokens expired), and at most ``max_grants`` are kept (the oldest go).
    """

    def __init__(self, *, max_unused_clients: int = MAX_UNUSED_CLIENTS,
                 unused_client_lifetime: float = UNUSED_CLIENT_LIFETIME, max_grants: int = MAX_GRANTS,
                 clock: Callable[[], float] = time.time) -> None:
        self.max_unused_clients = max_unused_clients
        self.unused_client_lifetime = unused_client_lifetime
        self.max_grants = max_grants
        self._clock = clock
        # _lock guards _clients, _unused and _grants: every request thread of the site reads and
        # writes them. _unused maps each client no user has allowed yet to when it registered,
        # oldest first.
        self._lock = threading.Lock()
        self._clients: dict[str, OAuthClientInformationFull] = {}
        self._unused: OrderedDict[str, float] = OrderedDict()
        self._grants: list[Grant] = []

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        with self._lock:
            self._expire_unused(self._clock())
            return self._clients.get(client_id)

    def add_client(self, client: OAuthClientInformationFull) -> None:
        now = self._clock()
        with self._lock:
            self._expire_unused(now)
            if client.client_id in self._clients and client.client_id not in self._unused:
                self._clients[client.client_id] = client  # a used client, re-registered: still used
                return
            self._unused.pop(client.client_id, None)
            while len(self._unused) >= self.max_unused_clients:
                oldest, _ = self._unused.popitem(last=False)
                del self._clients[oldest]
            self._clients[client.client_id] = client
            self._unused[client.client_id] = now

    def _expire_unused(self, now: float) -> None:
        while self._unused:
            oldest, registered = next(iter(self._unused.items()))
            if registered + self.unused_client_lifetime > now:
                return
            del self._unused[oldest]
            del self._clients[oldest]

    def add_grant(self, grant: Grant) -> None:
        now = self._clock()
        with self._lock:
            self._unused.pop(grant.client_id, None)
            live = [kept for kept in self._grants if not _dead(kept, now)]
            self._grants = [*live[max(0, len(live) - self.max_grants + 1):], grant]

    def find_grant(self, key: GrantKey, value: str) -> Grant | None:
        with self._lock:
            return next((grant for grant in self._grants if getattr(grant, key) == value), None)

    def update_grant(self, key: GrantKey, value: str, expected: dict[str, Any], changes: dict[str, Any]) -> bool:
        with self._lock:
            for index, grant in enumerate(self._grants):
                if getattr(grant, key) == value:
                    if any(getattr(grant, name) != want for name, want in expected.items()):
                        return False
                    self._grants[index] = replace(grant, **changes)
                    return True
            return False

    def delete_grant(self, key: GrantKey, value: str) -> None:
        with self._lock:
            self._grants = [grant for grant in self._grants if getattr(grant, key) != value]


def _dead(grant: Grant, now: float) -> bool:
    """Whether nothing of ``grant`` works any more: its code expired unspent, or every token it bought expired."""
    if not grant.code_used:
        return grant.code_expires_at < now
    return all(moment is None or moment < now for moment in (grant.access_expires_at, grant.refresh_expires_at))


class Signer(Protocol):
    """The host's way to sign data with its secret key (itsdangerous for Flask, ``django.core.signing``)."""

    def sign(self, data: dict[str, Any]) -> str: ...

    def unsign(self, text: str, max_age: int) -> dict[str, Any] | None:
        """The data, or ``None`` when the signature is wrong or older than ``max_age`` seconds."""
        ...


@dataclass(frozen=True)
class PendingAuthorization:
    """An authorization request waiting for the user's answer on the consent page."""

    client: OAuthClientInformationFull
    params: AuthorizationParams

    @property
    def client_name(self) -> str:
        return self.client.client_name or self.client.client_id

    @property
    def redirect_host(self) -> str:
        """Where the code will be sent, as the user should read it before allowing: the host and
        port only, never the user information before an ``@`` (``app.example@attacker.test``)."""
        parts = urlsplit(str(self.params.redirect_uri))
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        return host if parts.port is None else f"{host}:{parts.port}"


class SiteAuthorizationServer(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """The authorization-server provider of one site, as seen by one request (``base_url``).

    ``endpoint_path`` is where the MCP endpoint is mounted: the endpoint's URL is the protected
    resource, the same URL without a trailing slash is the issuer, and the authorization
    endpoints live under it (``/mcp/authorize``, ``/mcp/token``, ...; the consent page at
    ``/mcp/consent``). The access token's ``subject`` is the user's id as the host gives it.
    """

    authorization_response_iss_parameter_supported = True

    def __init__(self, store: GrantStore, signer: Signer, base_url: str, endpoint_path: str,
                 resource_name: str | None = None, registration_limiter: RateLimiter | None = None) -> None:
        self.store = store
        self.signer = signer
        self.registration_limiter = registration_limiter
        self.resource = base_url.rstrip("/") + "/" + endpoint_path.lstrip("/")
        self.issuer = self.resource.rstrip("/")
        self.resource_name = resource_name

    # --- the HTTP side ---------------------------------------------------------------------------
    @property
    def resource_metadata_url(self) -> str:
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource)))

    @property
    def consent_url(self) -> str:
        return self.issuer + CONSENT_PATH

    def answer(self, request: Request) -> Response | None:
        """Serve ``request`` when it is one of the authorization endpoints or metadata documents."""
        routes = create_protected_resource_routes(
            AnyHttpUrl(self.resource), [AnyHttpUrl(self.issuer)], resource_name=self.resource_name)
        routes += create_auth_routes(self, AnyHttpUrl(self.issuer), client_registration_options=REGISTRATION,
                                     revocation_options=RevocationOptions(enabled=True),
                                     registration_limiter=self.registration_limiter)
        for route in routes:
            if route.path == request.path:
                if request.method not in route.methods:
                    return Response("Method not allowed", errors.MethodNotAllowed.status,
                                    {"Allow": ", ".join(route.methods)})
                return route.endpoint(request)
        return None

    def www_authenticate(self, error: str | None = None) -> str:
        """The 401's challenge: where the resource metadata is, which leads a client here."""
        found = f'error="{error}", ' if error else ""
        return f'Bearer {found}resource_metadata="{self.resource_metadata_url}"'

    # --- clients ---------------------------------------------------------------------------------
    def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.store.get_client(client_id)

    def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.store.add_client(client_info)

    # --- the user's part -------------------------------------------------------------------------
    def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and params.resource.rstrip("/") != self.issuer:
            raise AuthorizeError("invalid_target", f"This server issues tokens for {self.resource} only")
        sealed = self.signer.sign({"client_id": client.client_id, "params": params.model_dump(mode="json")})
        return construct_redirect_uri(self.consent_url, request=sealed)

    def pending(self, sealed: str) -> PendingAuthorization | None:
        """The request a consent page shows, or ``None`` when its link was altered or is too old,
        or the client's registration no longer allows it (an operator removed the client, or the
        redirect URI or a scope): the host reads it again when the user answers, so Allow never
        sends a code where the client's current registration would not."""
        data = self.signer.unsign(sealed, CONSENT_LIFETIME)
        if data is None:
            return None
        client = self.store.get_client(str(data.get("client_id")))
        if client is None:
            return None
        params = AuthorizationParams.model_validate(data.get("params"))
        try:
            asked = params.redirect_uri if params.redirect_uri_provided_explicitly else None
            if str(client.validate_redirect_uri(asked)) != str(params.redirect_uri):
                return None
            if params.scopes:
                client.validate_scope(" ".join(params.scopes))
        except (InvalidRedirectUriError, InvalidScopeError):
            return None
        return PendingAuthorization(client, params)

    def decide(self, pending: PendingAuthorization, subject: str | None) -> str:
        """Where the browser goes after the user answered: back to the client with a code for
        ``subject``, or with ``access_denied`` when ``subject`` is ``None`` (the user said no)."""
        params = pending.params
        redirect_uri = str(params.redirect_uri)
        if subject is None:
            return construct_redirect_uri(redirect_uri, error="access_denied",
                                          error_description="The user did not allow access", state=params.state,
                                          iss=self.issuer)
        code = secrets.token_urlsafe(32)
        self.store.add_grant(Grant(
            client_id=pending.client.client_id, subject=subject, scopes=params.scopes or [],
            resource=params.resource or self.resource, redirect_uri=redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge, code_digest=digest(code),
            code_expires_at=time.time() + CODE_LIFETIME))
        return construct_redirect_uri(redirect_uri, code=code, state=params.state, iss=self.issuer)

    # --- codes and tokens ------------------------------------------------------------------------
    def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str
                                ) -> AuthorizationCode | None:
        grant = self.store.find_grant("code_digest", digest(authorization_code))
        if grant is None or grant.client_id != client.client_id:
            return None
        if grant.code_used:  # someone replays a spent code: what it bought may be stolen too
            self.store.delete_grant("code_digest", grant.code_digest)
            return None
        return AuthorizationCode(
            code=authorization_code, scopes=grant.scopes, expires_at=grant.code_expires_at,
            client_id=grant.client_id, code_challenge=grant.code_challenge, redirect_uri=AnyUrl(grant.redirect_uri),
            redirect_uri_provided_explicitly=grant.redirect_uri_provided_explicitly, resource=grant.resource,
            subject=grant.subject)

    def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                    authorization_code: AuthorizationCode) -> OAuthToken:
        family = digest(authorization_code.code)
        tokens, changes = _mint(authorization_code.scopes, family)
        if not self.store.update_grant("code_digest", family, {"code_used": False}, {"code_used": True, **changes}):
            self.store.delete_grant("code_digest", family)  # spent by a racing request: revoke what it bought
            raise TokenError("invalid_grant", "authorization code was already used")
        return tokens

    def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        grant = self.store.find_grant("refresh_digest", digest(refresh_token))
        if grant is None:
            self._revoke_family_of(client, refresh_token)
            return None
        if grant.client_id != client.client_id:
            return None
        return RefreshToken(token=refresh_token, client_id=grant.client_id, scopes=grant.scopes,
                            expires_at=_whole(grant.refresh_expires_at), resource=grant.resource,
                            subject=grant.subject)

    def _revoke_family_of(self, client: OAuthClientInformationFull, refresh_token: str) -> None:
        """A refresh token that is not its grant's current one, but carries the tag of a live grant
        of this client, was rotated out (or forged by someone who held one of the family): it is in
        a thief's hands or the client's, so the grant and every token it holds go (OAuth 2.1 §6.1)."""
        family, dot, _ = refresh_token.partition(".")
        if not dot:
            return
        grant = self.store.find_grant("code_digest", family)
        if grant is not None and grant.client_id == client.client_id and grant.code_used:
            self.store.delete_grant("code_digest", family)

    def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                               scopes: list[str]) -> OAuthToken:
        family = refresh_token.token.partition(".")[0]
        tokens, changes = _mint(scopes, family)
        old = digest(refresh_token.token)
        if not self.store.update_grant("refresh_digest", old, {"refresh_digest": old}, {"scopes": scopes, **changes}):
            self._revoke_family_of(client, refresh_token.token)  # rotated by a racing request: a reuse
            raise TokenError("invalid_grant", "refresh token was already used")
        return tokens

    def load_access_token(self, token: str) -> AccessToken | None:
        grant = self.store.find_grant("access_digest", digest(token))
        if grant is None or grant.access_expires_at is None or grant.access_expires_at < time.time():
            return None
        return AccessToken(token=token, client_id=grant.client_id, scopes=grant.scopes,
                           expires_at=_whole(grant.access_expires_at), resource=grant.resource,
                           subject=grant.subject)

    def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        key: GrantKey = "refresh_digest" if isinstance(token, RefreshToken) else "access_digest"
        self.store.delete_grant(key, digest(token.token))


def _mint(scopes: list[str], family: str) -> tuple[OAuthToken, dict[str, Any]]:
    """Fresh tokens for the client, and what the store keeps of them. The refresh token starts with
    ``family``, its grant's ``code_digest``, which finds the grant again when a rotated one returns."""
    access, refresh = secrets.token_urlsafe(32), f"{family}.{secrets.token_urlsafe(32)}"
    now = time.time()
    tokens = OAuthToken(access_token=access, expires_in=ACCESS_TOKEN_LIFETIME, refresh_token=refresh,
                        scope=" ".join(scopes) or None)
    return tokens, {"access_digest": digest(access), "access_expires_at": now + ACCESS_TOKEN_LIFETIME,
                    "refresh_digest": digest(refresh), "refresh_expires_at": now + REFRESH_TOKEN_LIFETIME}


def registration_limiter() -> RateLimiter:
    """The rate of registrations per address a host keeps for the life of its site."""
    return RateLimiter(REGISTRATIONS_PER_MINUTE, 60)


def _whole(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds)


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if that is what it is."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


__all__ = ["Grant", "GrantStore", "MemoryGrantStore", "PendingAuthorization", "Signer", "SiteAuthorizationServer",
           "bearer_token", "registration_limiter"]
