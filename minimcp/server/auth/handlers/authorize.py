"""The authorization endpoint (RFC 6749 §4.1.1, PKCE S256 required).

A good request goes to ``provider.authorize``, whose URL the browser is sent to: the login or
consent page, where the user first sees which client is asking.

Every error found here is answered to the user, as a 400 JSON page, and never redirected to the
client. RFC 6749 §4.1.2.1 forbids the redirect while the client or its redirect URI is unknown or
invalid; this endpoint goes further, because here the user has not seen the client yet: anyone may
register a client with a redirect URI of theirs, and an error sent there would bounce a victim from
this trusted origin to the attacker's page with no login or consent on the way (an open
redirector, RFC 9700 §4.11.2). So the rule is: a client hears of a refusal only after the user saw
it on the consent page (Deny sends ``access_denied`` back); a request that is wrong before that
(a bad scope, no PKCE, a resource this server does not serve) shows its reason to the user.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import AnyUrl, BaseModel, Field, ValidationError
from werkzeug.utils import redirect
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.errors import stringify_pydantic_error
from minimcp.server.auth.json_response import json_response
from minimcp.server.auth.provider import (
    AuthorizationErrorCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    construct_redirect_uri,
)
from minimcp.shared.auth import InvalidRedirectUriError, InvalidScopeError

logger = logging.getLogger("minimcp.server.auth")


class AuthorizationRequest(BaseModel):
    client_id: str
    redirect_uri: AnyUrl | None = None
    response_type: Literal["code"]
    code_challenge: str = Field(..., min_length=43, max_length=128)
    code_challenge_method: Literal["S256"] = "S256"
    state: str | None = None
    scope: str | None = None
    resource: str | None = None


class AuthorizationErrorResponse(BaseModel):
    error: AuthorizationErrorCode
    error_description: str | None = None
    error_uri: AnyUrl | None = None
    state: str | None = None


def _redirect(url: str) -> Response:
    response = redirect(url, 302)
    response.headers["Cache-Control"] = "no-store"
    return response


@dataclass
class AuthorizationHandler:
    provider: OAuthAuthorizationServerProvider[Any, Any, Any]
    issuer: str | None = None

    def handle(self, request: Request) -> Response:
        params = request.args if request.method == "GET" else request.form
        state = params.get("state")
        try:
            auth_request = AuthorizationRequest.model_validate(params.to_dict())
        except ValidationError as invalid:
            wrong_type = any(e["loc"] == ("response_type",) and e["type"] == "literal_error"
                             for e in invalid.errors())
            return self._page("unsupported_response_type" if wrong_type else "invalid_request",
                              stringify_pydantic_error(invalid), state)
        client = self.provider.get_client(auth_request.client_id)
        if client is None:
            return self._page("invalid_request", f"Client ID '{auth_request.client_id}' not found", state)
        try:
            redirect_uri = client.validate_redirect_uri(auth_request.redirect_uri)
        except InvalidRedirectUriError as bad:
            return self._page("invalid_request", bad.message, state)
        try:
            scopes = client.validate_scope(auth_request.scope)
        except InvalidScopeError as bad:
            return self._page("invalid_scope", bad.message, state)
        params_for_provider = AuthorizationParams(
            state=auth_request.state, scopes=scopes, code_challenge=auth_request.code_challenge,
            redirect_uri=redirect_uri, redirect_uri_provided_explicitly=auth_request.redirect_uri is not None,
            resource=auth_request.resource,
        )
        try:
            target = self.provider.authorize(client, params_for_provider)
        except AuthorizeError as refused:
            return self._page(refused.error, refused.error_description, state)
        return _redirect(self._with_issuer(target, str(redirect_uri)))

    def _with_issuer(self, target: str, redirect_uri: str) -> str:
        """A provider that answers at once (no login page) redirects straight to the client with a
        code; that response gets ``iss`` too (RFC 9207), like every redirect this endpoint makes."""
        if self.issuer is None or target.split("?", 1)[0] != redirect_uri.split("?", 1)[0]:
            return target
        query = parse_qs(urlsplit(target).query)
        if "code" not in query or "iss" in query:
            return target
        return construct_redirect_uri(target, iss=self.issuer)

    def _page(self, error: AuthorizationErrorCode, description: str | None, state: str | None) -> Response:
        body = AuthorizationErrorResponse(error=error, error_description=description, state=state)
        return json_response(body, 400, {"Cache-Control": "no-store"})
