"""Enterprise-managed authorization (SEP-990): an ID-JAG from the company's identity provider.

Two legs. First, at the enterprise IdP, the user's ID token is exchanged (RFC 8693) for an
Identity Assertion Authorization Grant, a JWT naming the MCP authorization server as audience and
the MCP server as resource: :func:`request_id_jag` does that. Second, the ID-JAG is presented to
the MCP authorization server with the JWT bearer grant (RFC 7523), the client authenticating with
its secret: :class:`IdentityAssertionOAuthProvider` does that, whenever the MCP server asks.

The authorization server is configuration, not discovery: metadata is read from the configured
issuer, the token endpoint must be on that issuer's origin, and the MCP server is never asked
where to send the assertion or the secret.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import requests

from minimcp.client.auth.discovery import discover_authorization_server, origin
from minimcp.client.auth.exceptions import OAuthFlowError, OAuthTokenError
from minimcp.client.auth.extensions.jwt_bearer import JWTBearerOAuthProvider
from minimcp.client.auth.storage import TokenStorage
from minimcp.client.auth.wire import json_object, oauth_error_text, read_limited
from minimcp.shared.auth import OAuthToken
from minimcp.shared.auth_utils import require_sync_methods, resource_url_from_server_url

TOKEN_EXCHANGE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"

#: Given the audience (the MCP authorization server's issuer) and the resource, returns an ID-JAG.
IdJagProvider = Callable[[str, str], str]


def request_id_jag(
    token_endpoint: str,
    id_token: str,
    audience: str,
    resource: str,
    client_id: str,
    client_secret: str | None = None,
    scope: str | None = None,
    timeout: float = 30.0,
) -> str:
    """Leg one: exchange an ID token at the enterprise IdP for an ID-JAG (RFC 8693)."""
    form = {
        "grant_type": TOKEN_EXCHANGE_GRANT_TYPE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
        "client_id": client_id,
    }
    if client_secret:
        form["client_secret"] = client_secret
    if scope:
        form["scope"] = scope
    try:
        response = requests.post(token_endpoint, data=form, timeout=timeout, allow_redirects=False, stream=True)
        content = read_limited(response)
    except (requests.exceptions.RequestException, ConnectionError) as exc:
        raise OAuthFlowError(f"The identity provider {token_endpoint} could not be reached ({exc.__class__.__name__})") from None
    if response.status_code != 200:
        raise OAuthTokenError(
            f"The identity provider {token_endpoint} refused the token exchange with HTTP {response.status_code}"
            f"{oauth_error_text(content)}"
        )
    document = json_object(content) or {}
    if document.get("issued_token_type") != ID_JAG_TOKEN_TYPE or not isinstance(document.get("access_token"), str):
        raise OAuthTokenError(f"The identity provider {token_endpoint} answered the token exchange without an ID-JAG")
    return document["access_token"]


class IdentityAssertionOAuthProvider(JWTBearerOAuthProvider):
    """Leg two: the ID-JAG from ``assertion_provider(audience, resource)`` traded for an MCP token."""

    def __init__(
        self,
        server_url: str,
        storage: TokenStorage,
        client_id: str,
        client_secret: str,
        issuer: str,
        assertion_provider: IdJagProvider,
        scope: str | None = None,
        token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_post",
    ) -> None:
        require_sync_methods(assertion_provider, "assertion_provider")
        if not client_secret:
            raise ValueError("client_secret is required: the ID-JAG grant is for confidential clients")
        if not issuer:
            raise ValueError("issuer is required: the authorization server is configuration, not discovery")
        resource = resource_url_from_server_url(server_url)
        super().__init__(
            server_url,
            storage,
            client_id,
            lambda audience: assertion_provider(issuer, resource),
            scope=scope,
            issuer=issuer,
            client_secret=client_secret,
            token_endpoint_auth_method=token_endpoint_auth_method,
        )
        self._resource = resource

    def _discover(self, resource_metadata_url: str | None) -> None:
        assert self._issuer is not None
        metadata = discover_authorization_server(self._http, self._issuer, self._issuer, self.timeout)
        assert metadata is not None
        if origin(metadata.token_endpoint).lower() != origin(self._issuer).lower():
            raise OAuthFlowError(f"The token endpoint {metadata.token_endpoint} is not on the issuer's origin {self._issuer}")
        self.context.auth_server_url = self._issuer
        self.context.oauth_metadata = metadata
        self._choose_dpop()

    def _request_token(self, form: dict[str, str]) -> OAuthToken:
        form["resource"] = self._resource
        return super()._request_token(form)


__all__ = [
    "ID_JAG_TOKEN_TYPE",
    "IdentityAssertionOAuthProvider",
    "IdJagProvider",
    "TOKEN_EXCHANGE_GRANT_TYPE",
    "request_id_jag",
]
