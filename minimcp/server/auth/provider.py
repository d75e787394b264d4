"""The contracts between the HTTP layer and the code that knows tokens and clients.

A resource server needs one thing: a ``TokenVerifier`` that turns the bearer string a client sent
into an ``AccessToken`` (or ``None``). An authorization server needs more: an
``OAuthAuthorizationServerProvider`` that stores clients, codes and tokens. Both are synchronous,
plain ``def``: they run on the thread serving the request, and a provider backed by a database or an
HTTP call simply blocks it. The HTTP handlers validate the protocol (PKCE, redirect URIs, client
authentication, expiry); providers only store, look up and mint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import AnyUrl, BaseModel

from minimcp.shared.auth import OAuthClientInformationFull, OAuthToken


class AuthorizationParams(BaseModel):
    """A validated authorization request, handed to ``provider.authorize``."""

    state: str | None
    scopes: list[str] | None
    code_challenge: str
    redirect_uri: AnyUrl
    redirect_uri_provided_explicitly: bool
    resource: str | None = None


class IdentityAssertionParams(BaseModel):
    """A validated RFC 7523 jwt-bearer token request (an ID-JAG from an enterprise identity provider)."""

    assertion: str
    scopes: list[str] | None = None
    resource: str | None = None


class AuthorizationCode(BaseModel):
    code: str
    scopes: list[str]
    expires_at: float
    client_id: str
    code_challenge: str
    redirect_uri: AnyUrl
    redirect_uri_provided_explicitly: bool
    resource: str | None = None
    subject: str | None = None


class _IssuedToken(BaseModel):
    """What any issued token grants: to which client, on whose behalf, which scopes, until when.

    ``resource`` is the RFC 8707 resource the token was issued for; ``subject`` the resource owner
    (``sub``, unique per issuer).
    """

    token: str
    client_id: str
    scopes: list[str]
    expires_at: int | None = None
    resource: str | None = None
    subject: str | None = None


class RefreshToken(_IssuedToken):
    """A refresh token the built-in authorization server issued, traded at ``/token`` for new tokens."""


class AccessToken(_IssuedToken):
    """A verified bearer token; ``claims`` is anything else the verifier kept (``iss`` among them)."""

    claims: dict[str, Any] | None = None


def principal_components(token: AccessToken) -> tuple[str, str | None, str | None]:
    """Who a token speaks for: ``(client_id, issuer, subject)``; parts the verifier did not supply are ``None``."""
    issuer = (token.claims or {}).get("iss")
    return token.client_id, None if issuer is None else str(issuer), token.subject


def principal_of(token: AccessToken) -> str:
    """The principal string that binds legacy sessions and sealed ``requestState`` to a token's holder.

    Two tokens of one user through one client (a refreshed token, say) give the same string; the
    same user through another client, or another user, give another.
    """
    return json.dumps(principal_components(token), separators=(",", ":"))


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """The scopes a token or introspection answer grants: ``scope`` (space-separated) or ``scp``."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, str):
        return scp.split()
    if isinstance(scp, list):
        return [str(item) for item in scp]
    return []


RegistrationErrorCode = Literal[
    "invalid_redirect_uri", "invalid_client_metadata", "invalid_software_statement", "unapproved_software_statement",
]
AuthorizationErrorCode = Literal[
    "invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type", "invalid_scope",
    "server_error", "temporarily_unavailable", "invalid_target",
]
TokenErrorCode = Literal[
    "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
    "invalid_scope", "invalid_target",
]


@dataclass(frozen=True)
class RegistrationError(Exception):
    """Raised by ``provider.register_client`` to refuse a registration (RFC 7591 §3.2.2)."""

    error: RegistrationErrorCode
    error_description: str | None = None


@dataclass(frozen=True)
class AuthorizeError(Exception):
    """Raised by ``provider.authorize`` to refuse an authorization request (RFC 6749 §4.1.2.1); the
    endpoint shows it to the user as a 400 page, never redirects it to the client (see
    ``handlers/authorize.py``)."""

    error: AuthorizationErrorCode
    error_description: str | None = None


@dataclass(frozen=True)
class TokenError(Exception):
    """Raised by the provider's exchange methods to refuse a token request (RFC 6749 §5.2)."""

    error: TokenErrorCode
    error_description: str | None = None


class InvalidTokenError(Exception):
    """Raised by a token verifier to refuse a token and say why; the client reads the reason in
    the 401's ``error_description``, so it must never contain the token itself."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class TokenVerifier(Protocol):
    """Turns a bearer token into what it grants.

    Return ``None`` for a token you do not accept (the client gets 401 ``invalid_token``), or raise
    ``InvalidTokenError("why")`` to say why. Set ``AccessToken.resource`` to the resource the token
    was issued for when ``AuthSettings.validate_token_resource`` should check it; otherwise check the
    audience yourself.
    """

    def verify_token(self, token: str) -> AccessToken | None: ...


AuthorizationCodeT = TypeVar("AuthorizationCodeT", bound=AuthorizationCode)
RefreshTokenT = TypeVar("RefreshTokenT", bound=RefreshToken)
AccessTokenT = TypeVar("AccessTokenT", bound=AccessToken)


class OAuthAuthorizationServerProvider(Protocol, Generic[AuthorizationCodeT, RefreshTokenT, AccessTokenT]):
    """The storage and policy behind the built-in authorization server (``auth_server_provider=``).

    Every method is a plain ``def``. Codes and tokens must carry at least 128 bits of randomness
    (``secrets.token_urlsafe(32)``). ``authorize`` returns the URL to send the user's browser to:
    a login page of yours, or another identity provider, whose end is a redirect to
    ``params.redirect_uri`` with a fresh code (``construct_redirect_uri`` builds it).

    RFC 9207: a provider whose every redirect back to a client carries ``iss=<issuer>`` says so
    with a class attribute ``authorization_response_iss_parameter_supported = True`` [minimcp];
    the metadata then advertises it, and clients reject responses without it. A redirect
    ``authorize`` returns straight to the client gets ``iss`` added by the endpoint.
    """

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None: ...

    def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a dynamically registered client. Registration is anonymous: bound how many
        registrations no user has allowed yet are kept, and let them expire (the endpoint already
        bounds each one's size and the rate per address)."""
        ...

    def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str: ...

    def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCodeT | None: ...

    def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCodeT
    ) -> OAuthToken: ...

    def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshTokenT | None:
        """The refresh token, or ``None``. One already rotated out is a stolen token in use (OAuth
        2.1 §6.1): revoke its whole family (every token rotated from the same grant, and their
        access tokens) before answering ``None``; a spent code's replay likewise revokes what it bought."""
        ...

    def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshTokenT, scopes: list[str]
    ) -> OAuthToken:
        """Mint new tokens for a refresh token; rotate it (revoke the old one, return a new one)."""
        ...

    def load_access_token(self, token: str) -> AccessTokenT | None: ...

    def revoke_token(self, token: AccessTokenT | RefreshTokenT) -> None:
        """Revoke a token and its sibling (the access token's refresh token, or the other way round)."""
        ...

    def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        """Trade an enterprise ID-JAG for an access token (``AuthSettings.identity_assertion_enabled``).

        Validating the assertion (RFC 7523 §3) is the provider's job; by default the grant is refused.
        """
        raise TokenError("unsupported_grant_type", "The JWT bearer grant is not supported by this authorization server")


def construct_redirect_uri(redirect_uri_base: str, **params: str | None) -> str:
    """``redirect_uri_base`` with ``params`` added to its query (those that are not ``None``)."""
    parts = urlsplit(redirect_uri_base)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query.extend((key, value) for key, value in params.items() if value is not None)
    return urlunsplit(parts._replace(query=urlencode(query)))


class ProviderTokenVerifier:
    """The resource-server side of the built-in authorization server: tokens are what the provider issued."""

    def __init__(self, provider: OAuthAuthorizationServerProvider[Any, Any, Any]) -> None:
        self.provider = provider

    def verify_token(self, token: str) -> AccessToken | None:
        return self.provider.load_access_token(token)
