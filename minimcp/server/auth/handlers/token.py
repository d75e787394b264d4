"""The token endpoint: authorization code with PKCE (RFC 6749 §4.1.3, RFC 7636), refresh
(RFC 6749 §6) and, when enabled, the RFC 7523 jwt-bearer grant for enterprise ID-JAGs.

Every answer is ``no-store``. A code or refresh token of another client is treated as unknown, so a
client cannot probe for others' grants.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AnyHttpUrl, AnyUrl, BaseModel, Field, TypeAdapter, ValidationError
from werkzeug.wrappers import Request, Response

from minimcp.client.auth.pkce import s256
from minimcp.server.auth.errors import stringify_pydantic_error
from minimcp.server.auth.json_response import NO_STORE, json_response
from minimcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from minimcp.server.auth.provider import (
    AuthorizationCode,
    IdentityAssertionParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    TokenErrorCode,
)
from minimcp.shared.auth import OAuthClientInformationFull, OAuthToken


class _ClientTokenRequest(BaseModel):
    """What every grant's request names: the client (authenticated before it is read) and the
    RFC 8707 resource."""

    client_id: str
    client_secret: str | None = None
    resource: str | None = None


class AuthorizationCodeRequest(_ClientTokenRequest):
    grant_type: Literal["authorization_code"]
    code: str
    redirect_uri: AnyUrl | None = None
    code_verifier: str = Field(..., pattern=r"^[A-Za-z0-9._~-]{43,128}$")


class _ScopedTokenRequest(_ClientTokenRequest):
    scope: str | None = None

    def requested_scopes(self) -> list[str] | None:
        """The scopes asked for, or ``None`` when the request leaves ``scope`` out."""
        return self.scope.split() if self.scope else None


class RefreshTokenRequest(_ScopedTokenRequest):
    grant_type: Literal["refresh_token"]
    refresh_token: str


class JwtBearerRequest(_ScopedTokenRequest):
    grant_type: Literal["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    assertion: str


TokenRequest = Annotated[AuthorizationCodeRequest | RefreshTokenRequest | JwtBearerRequest,
                         Field(discriminator="grant_type")]
token_request_adapter: TypeAdapter[Any] = TypeAdapter(TokenRequest)


class TokenErrorResponse(BaseModel):
    error: TokenErrorCode
    error_description: str | None = None
    error_uri: AnyHttpUrl | None = None


TokenSuccessResponse = OAuthToken


def _error(error: TokenErrorCode, description: str, status: int = 400) -> Response:
    return json_response(TokenErrorResponse(error=error, error_description=description), status, NO_STORE)


GrantT = TypeVar("GrantT", AuthorizationCode, RefreshToken)


def _held(grant: GrantT | None, client: OAuthClientInformationFull, what: str) -> GrantT:
    """The code or refresh token if this client holds it and it is still valid. Another client's
    is reported as unknown, so that no client can probe for others' grants."""
    if grant is None or grant.client_id != client.client_id:
        raise TokenError("invalid_grant", f"{what} does not exist")
    if grant.expires_at is not None and grant.expires_at < time.time():
        raise TokenError("invalid_grant", f"{what} has expired")
    return grant


@dataclass
class TokenHandler:
    provider: OAuthAuthorizationServerProvider[Any, Any, Any]
    client_authenticator: ClientAuthenticator
    identity_assertion_enabled: bool = False

    def handle(self, request: Request) -> Response:
        try:
            client, form = self.client_authenticator.authenticated_form(request)
        except AuthenticationError as refused:
            return _error("invalid_client", refused.message, 401)
        try:
            token_request = token_request_adapter.validate_python(form)
        except ValidationError as invalid:
            if any(e["type"] == "union_tag_invalid" for e in invalid.errors()):
                return _error("unsupported_grant_type", f"Unsupported grant_type {form.get('grant_type')!r}")
            return _error("invalid_request", stringify_pydantic_error(invalid))
        if token_request.grant_type not in client.grant_types:
            return _error("unsupported_grant_type",
                          f"Client is not registered for the {token_request.grant_type} grant "
                          f"(registered: {', '.join(client.grant_types)})")
        try:
            if isinstance(token_request, AuthorizationCodeRequest):
                tokens = self._code(client, token_request)
            elif isinstance(token_request, RefreshTokenRequest):
                tokens = self._refresh(client, token_request)
            else:
                tokens = self._assertion(client, token_request)
        except TokenError as refused:
            return _error(refused.error, refused.error_description or refused.error)
        return json_response(tokens, 200, NO_STORE)

    def _code(self, client: OAuthClientInformationFull, request: AuthorizationCodeRequest) -> OAuthToken:
        code = _held(self.provider.load_authorization_code(client, request.code), client, "authorization code")
        expected_uri = str(code.redirect_uri) if code.redirect_uri_provided_explicitly else None
        given_uri = None if request.redirect_uri is None else str(request.redirect_uri)
        if given_uri != expected_uri:
            raise TokenError("invalid_request", "redirect_uri did not match the one used when creating auth code")
        if not hmac.compare_digest(s256(request.code_verifier), code.code_challenge):
            raise TokenError("invalid_grant", "incorrect code_verifier")
        if request.resource is not None and code.resource is not None and request.resource != code.resource:
            raise TokenError("invalid_target", "resource differs from the one authorized")
        return self.provider.exchange_authorization_code(client, code)

    def _refresh(self, client: OAuthClientInformationFull, request: RefreshTokenRequest) -> OAuthToken:
        refresh = _held(self.provider.load_refresh_token(client, request.refresh_token), client, "refresh token")
        requested = request.requested_scopes()
        scopes = refresh.scopes if requested is None else requested
        for scope in scopes:
            if scope not in refresh.scopes:
                raise TokenError("invalid_scope", f"cannot request scope `{scope}` not provided by refresh token")
        return self.provider.exchange_refresh_token(client, refresh, scopes)

    def _assertion(self, client: OAuthClientInformationFull, request: JwtBearerRequest) -> OAuthToken:
        if not self.identity_assertion_enabled:
            raise TokenError("unsupported_grant_type",
                             "The JWT bearer grant is not supported by this authorization server")
        if not client.client_secret:
            raise TokenError("unauthorized_client", "The JWT bearer grant requires a confidential client")
        params = IdentityAssertionParams(assertion=request.assertion, scopes=request.requested_scopes(),
                                         resource=request.resource)
        return self.provider.exchange_identity_assertion(client, params)


