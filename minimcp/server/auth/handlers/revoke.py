"""Token revocation (RFC 7009), when ``RevocationOptions(enabled=True)``.

The client authenticates; a token that is unknown, already revoked, or another client's gets the
same empty 200 as a revoked one, so the endpoint tells nothing about tokens it does not own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.errors import stringify_pydantic_error
from minimcp.server.auth.json_response import NO_STORE, json_response
from minimcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from minimcp.server.auth.provider import OAuthAuthorizationServerProvider


class RevocationRequest(BaseModel):
    token: str
    token_type_hint: Literal["access_token", "refresh_token"] | None = None
    client_id: str
    client_secret: str | None = None


class RevocationErrorResponse(BaseModel):
    error: Literal["invalid_request", "unauthorized_client", "invalid_client"]
    error_description: str | None = None


@dataclass
class RevocationHandler:
    provider: OAuthAuthorizationServerProvider[Any, Any, Any]
    client_authenticator: ClientAuthenticator

    def handle(self, request: Request) -> Response:
        try:
            client, form = self.client_authenticator.authenticated_form(request)
        except AuthenticationError as refused:
            return json_response(RevocationErrorResponse(error="invalid_client", error_description=refused.message),
                                 401, NO_STORE)
        try:
            revocation = RevocationRequest.model_validate(form)
        except ValidationError as invalid:
            return json_response(RevocationErrorResponse(error="invalid_request",
                                                         error_description=stringify_pydantic_error(invalid)),
                                 400, NO_STORE)
        loaders = [self.provider.load_access_token, lambda token: self.provider.load_refresh_token(client, token)]
        if revocation.token_type_hint == "refresh_token":
            loaders.reverse()
        for load in loaders:
            found = load(revocation.token)
            if found is not None:
                if found.client_id == client.client_id:
                    self.provider.revoke_token(found)
                break
        return Response(status=200, headers=NO_STORE)
