"""One protected MCP endpoint: everything its HTTP edge needs from the authorization layer.

``ProtectedResource`` is built from what ``MCPServer(auth=..., token_verifier=...,
auth_server_provider=...)`` was given. It offers the WSGI app three things and nothing else:

- ``routes``: the protected-resource metadata (when ``resource_server_url`` is set) and, with a
  provider, the built-in authorization server's endpoints;
- ``authenticate(environ)``: the bearer check, which leaves the verified token in the environ;
- ``principal(environ)``: the principal hook, the token's holder as one string, which then binds
  legacy sessions and sealed ``requestState`` like any other principal.

A tool's own scopes (``@mcp.tool(required_scopes=[...])``) are checked by ``scope_challenge``
(``minimcp.server.auth.middleware.bearer_auth``) once the edge knows which tool a call names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minimcp.server.auth import ACCESS_TOKEN_KEY
from minimcp.server.auth.middleware.bearer_auth import AuthChallenge, BearerAuthBackend
from minimcp.server.auth.provider import (
    AccessToken,
    OAuthAuthorizationServerProvider,
    ProviderTokenVerifier,
    TokenVerifier,
    principal_of,
)
from minimcp.server.auth.routes import (
    Route,
    build_resource_metadata_url,
    create_auth_routes,
    create_protected_resource_routes,
)
from minimcp.server.auth.settings import AuthSettings
from minimcp.shared.auth_utils import require_sync_methods

def check_auth_options(auth: AuthSettings | None, token_verifier: TokenVerifier | None,
                       auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None,
                       *, exclusive: bool = True) -> None:
    """Refuse, when the server is built, a combination that would leave the endpoint half protected.

    ``MCPServer`` takes one source of tokens (it derives the verifier from a provider), as the
    official one does; the low-level ``streamable_http_app`` is ``exclusive=False``: it takes both,
    the verifier checking tokens and the provider serving the authorization server's endpoints.
    """
    require_sync_methods(token_verifier, "the token verifier's", TokenVerifier)
    require_sync_methods(auth_server_provider, "the auth_server_provider's", OAuthAuthorizationServerProvider)
    if auth is None:
        if token_verifier is not None or auth_server_provider is not None:
            raise ValueError("token_verifier= and auth_server_provider= need auth=AuthSettings(issuer_url=..., "
                             "resource_server_url=...) to say what they protect")
        return
    if exclusive and token_verifier is not None and auth_server_provider is not None:
        raise ValueError("Give either token_verifier= (tokens from an outside authorization server) or "
                         "auth_server_provider= (the built-in one), not both")
    if token_verifier is None and auth_server_provider is None:
        raise ValueError("auth= needs a token_verifier= to check bearer tokens (for example JWTVerifier(...)), "
                         "or an auth_server_provider= to issue them")


class ProtectedResource:
    def __init__(self, auth: AuthSettings, token_verifier: TokenVerifier | None = None,
                 auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
                 tool_scopes: Iterable[str] = ()) -> None:
        check_auth_options(auth, token_verifier, auth_server_provider, exclusive=False)
        verifier = token_verifier
        if verifier is None:
            assert auth_server_provider is not None  # check_auth_options refuses auth= with neither
            verifier = ProviderTokenVerifier(auth_server_provider)
        self.settings = auth
        self.required_scopes = list(auth.required_scopes or [])
        self.backend = BearerAuthBackend(
            verifier, required_scopes=self.required_scopes,
            resource_server_url=auth.resource_server_url if auth.validate_token_resource else None,
        )
        self.resource_metadata_url: str | None = None
        self.routes: list[Route] = []
        if auth.resource_server_url is not None:
            self.resource_metadata_url = str(build_resource_metadata_url(auth.resource_server_url))
            self.routes += create_protected_resource_routes(
                resource_url=auth.resource_server_url, authorization_servers=[auth.issuer_url],
                scopes_supported=list(dict.fromkeys([*self.required_scopes, *tool_scopes])) or None,
                resource_documentation=auth.service_documentation_url,
            )
        if auth_server_provider is not None:
            self.routes += create_auth_routes(
                provider=auth_server_provider, issuer_url=auth.issuer_url,
                service_documentation_url=auth.service_documentation_url,
                client_registration_options=auth.client_registration_options,
                revocation_options=auth.revocation_options,
                identity_assertion_enabled=auth.identity_assertion_enabled,
            )

    def authenticate(self, environ: dict[str, Any]) -> AccessToken:
        """The request's verified token (also left in the environ), or an ``AuthChallenge``."""
        token = self.backend.authenticate(environ)
        environ[ACCESS_TOKEN_KEY] = token
        return token

    @staticmethod
    def principal(environ: dict[str, Any]) -> str | None:
        token = environ.get(ACCESS_TOKEN_KEY)
        return principal_of(token) if token is not None else None

    def www_authenticate(self, challenge: AuthChallenge) -> str:
        return challenge.www_authenticate(self.resource_metadata_url)
