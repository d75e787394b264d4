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
the first one issued, RFC 6749 §4.1.2); only SHA-256 digests of codes and tokens are stored; the
pending request travels to the consent page signed with the site's secret key, so it cannot be
altered on the way; the consent form is the host's CSRF-protected form.

This module knows no framework. A host gives it a :class:`GrantStore` (memory for Flask, the
project's database for Django), a :class:`Signer` built on its secret key, and the request's
base URL, and serves the consent page itself.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
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
from minimcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from minimcp.shared.auth import OAuthClientInformationFull, OAuthToken

#: A code is traded for tokens at once by the client that asked for it; two minutes is plenty.
CODE_LIFETIME = 120
ACCESS_TOKEN_LIFETIME = 3600
REFRESH_TOKEN_LIFETIME = 30 * 24 * 3600
#: How long a consent page stays valid, the time the user may take to sign in.
CONSENT_LIFETIME = 600
#: The AS tier's endpoints, under the MCP endpoint (the issuer), which a host routes to ``answer``.
ENDPOINT_PATHS = (AUTHORIZATION_PATH, TOKEN_PATH, REGISTRATION_PATH, REVOCATION_PATH)
#: The consent page, under the MCP endpoint too; the host serves it behind its login.
CONSENT_PATH = "/consent"
#: Where the hosts' default consent page lives (``minimcp/consent.html``): one file that Jinja and
#: Django's engine both read, given ``pending``, ``sealed``, ``site``, ``username``, ``csrf_field``
#: and ``csrf_token``.
TEMPLATES = Path(__file__).parent / "templates"

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
    says whether it did, so a code or refresh token raced by two requests is spent once."""

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None: ...

    def add_client(self, client: OAuthClientInformationFull) -> None: ...

    def add_grant(self, grant: Grant) -> None: ...

    def find_grant(self, key: GrantKey, value: str) -> Grant | None: ...

    def update_grant(self, key: GrantKey, value: str, expected: dict[str, Any], changes: dict[str, Any]) -> bool: ...

    def delete_grant(self, key: GrantKey, value: str) -> None: ...


class MemoryGrantStore:
    """Clients and grants in this process's memory: they are gone when it restarts (users sign in
    again). A site served by several processes needs a shared store instead."""

    def __init__(self) -> None:
        # _lock guards _clients and _grants: every request thread of the site reads and writes them.
        self._lock = threading.Lock()
        self._clients: dict[str, OAuthClientInformationFull] = {}
        self._grants: list[Grant] = []

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        with self._lock:
            return self._clients.get(client_id)

    def add_client(self, client: OAuthClientInformationFull) -> None:
        with self._lock:
            self._clients[client.client_id] = client

    def add_grant(self, grant: Grant) -> None:
        with self._lock:
            self._grants.append(grant)

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
        """Where the code will be sent, as the user should read it before allowing."""
        return urlsplit(str(self.params.redirect_uri)).netloc


class SiteAuthorizationServer:
    """The authorization-server provider of one site, as seen by one request (``base_url``).

    ``endpoint_path`` is where the MCP endpoint is mounted: the endpoint's URL is the protected
    resource, the same URL without a trailing slash is the issuer, and the authorization
    endpoints live under it (``/mcp/authorize``, ``/mcp/token``, ...; the consent page at
    ``/mcp/consent``). The access token's ``subject`` is the user's id as the host gives it.
    """

    authorization_response_iss_parameter_supported = True

    def __init__(self, store: GrantStore, signer: Signer, base_url: str, endpoint_path: str,
                 resource_name: str | None = None) -> None:
        self.store = store
        self.signer = signer
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
        routes += create_auth_routes(self, AnyHttpUrl(self.issuer),
                                     client_registration_options=ClientRegistrationOptions(enabled=True),
                                     revocation_options=RevocationOptions(enabled=True))
        for route in routes:
            if route.path == request.path:
                if request.method not in route.methods:
                    return Response("Method not allowed", 405, {"Allow": ", ".join(route.methods)})
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
        """The request a consent page shows, or ``None`` when its link was altered or is too old."""
        data = self.signer.unsign(sealed, CONSENT_LIFETIME)
        if data is None:
            return None
        client = self.store.get_client(str(data.get("client_id")))
        if client is None:
            return None
        return PendingAuthorization(client, AuthorizationParams.model_validate(data.get("params")))

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
        tokens, changes = _mint(authorization_code.scopes)
        if not self.store.update_grant("code_digest", digest(authorization_code.code), {"code_used": False},
                                       {"code_used": True, **changes}):
            raise TokenError("invalid_grant", "authorization code was already used")
        return tokens

    def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        grant = self.store.find_grant("refresh_digest", digest(refresh_token))
        if grant is None or grant.client_id != client.client_id:
            return None
        return RefreshToken(token=refresh_token, client_id=grant.client_id, scopes=grant.scopes,
                            expires_at=_whole(grant.refresh_expires_at), resource=grant.resource,
                            subject=grant.subject)

    def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                               scopes: list[str]) -> OAuthToken:
        tokens, changes = _mint(scopes)
        old = digest(refresh_token.token)
        if not self.store.update_grant("refresh_digest", old, {"refresh_digest": old}, {"scopes": scopes, **changes}):
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


def _mint(scopes: list[str]) -> tuple[OAuthToken, dict[str, Any]]:
    """Fresh tokens for the client, and what the store keeps of them."""
    access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = time.time()
    tokens = OAuthToken(access_token=access, expires_in=ACCESS_TOKEN_LIFETIME, refresh_token=refresh,
                        scope=" ".join(scopes) or None)
    return tokens, {"access_digest": digest(access), "access_expires_at": now + ACCESS_TOKEN_LIFETIME,
                    "refresh_digest": digest(refresh), "refresh_expires_at": now + REFRESH_TOKEN_LIFETIME}


def _whole(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds)


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if that is what it is."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


__all__ = ["Grant", "GrantStore", "MemoryGrantStore", "PendingAuthorization", "Signer", "SiteAuthorizationServer",
           "bearer_token"]
