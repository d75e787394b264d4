"""Dynamic client registration (RFC 7591 §3), when ``ClientRegistrationOptions(enabled=True)``.

A client that asks for no authentication method gets ``client_secret_post`` and a secret; a public
client (``none``) gets none. Registration is refused for what this server could never honour: a
``private_key_jwt`` client (it holds no client keys), a client without the ``code`` response type
or the ``authorization_code`` grant, scopes outside ``valid_scopes``, and the jwt-bearer grant
(an identity-assertion client is provisioned out of band).
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.errors import stringify_pydantic_error
from minimcp.server.auth.json_response import NO_STORE, json_response
from minimcp.server.auth.provider import OAuthAuthorizationServerProvider, RegistrationError, RegistrationErrorCode
from minimcp.server.auth.settings import ClientRegistrationOptions
from minimcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata

RegistrationRequest = OAuthClientMetadata


class RegistrationErrorResponse(BaseModel):
    error: RegistrationErrorCode
    error_description: str | None = None


def _refuse(description: str, error: RegistrationErrorCode = "invalid_client_metadata") -> Response:
    return json_response(RegistrationErrorResponse(error=error, error_description=description), 400, NO_STORE)


@dataclass
class RegistrationHandler:
    provider: OAuthAuthorizationServerProvider[Any, Any, Any]
    options: ClientRegistrationOptions

    def handle(self, request: Request) -> Response:
        try:
            metadata = OAuthClientMetadata.model_validate_json(request.get_data())
        except ValidationError as invalid:
            return _refuse(stringify_pydantic_error(invalid))
        method = metadata.token_endpoint_auth_method or "client_secret_post"
        if method == "private_key_jwt":
            return _refuse("token_endpoint_auth_method 'private_key_jwt' is not supported")
        scope = metadata.scope
        if scope is None and self.options.default_scopes is not None:
            scope = " ".join(self.options.default_scopes)
        elif scope is not None and self.options.valid_scopes is not None:
            unknown = sorted(set(scope.split()) - set(self.options.valid_scopes))
            if unknown:
                return _refuse(f"Requested scopes are not valid: {', '.join(unknown)}")
        if "authorization_code" not in metadata.grant_types:
            return _refuse("grant_types must include 'authorization_code'")
        if JWT_BEARER_GRANT_TYPE in metadata.grant_types:
            return _refuse(f"grant_types must not include '{JWT_BEARER_GRANT_TYPE}'; "
                           "identity-assertion clients are registered out of band")
        if "code" not in metadata.response_types:
            return _refuse("response_types must include 'code' for authorization_code grant")
        issued_at = int(time.time())
        secret = None if method == "none" else secrets.token_hex(32)
        expires_at = None
        if secret is not None:  # RFC 7591 §3.2.1: required with a secret; 0 means it never expires
            expiry = self.options.client_secret_expiry_seconds
            expires_at = issued_at + expiry if expiry is not None else 0
        client = OAuthClientInformationFull.model_validate({
            **metadata.model_dump(), "scope": scope, "token_endpoint_auth_method": method,
            "client_id": str(uuid.uuid4()), "client_id_issued_at": issued_at,
            "client_secret": secret, "client_secret_expires_at": expires_at,
        })
        try:
            self.provider.register_client(client)
        except RegistrationError as refused:
            return _refuse(refused.error_description or refused.error, refused.error)
        return json_response(client, 201, NO_STORE)
