"""Machine-to-machine OAuth: the client credentials grant (SEP-1046), with a secret or a signed JWT.

No person and no browser: the client proves who it is at the token endpoint and gets a token for
itself. ``issuer`` names the authorization server the credentials belong to; with it, they are
only ever sent to that server, whatever the MCP server's metadata says.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from minimcp.client.auth.discovery import issuers_match
from minimcp.client.auth.exceptions import OAuthFlowError
from minimcp.client.auth.jose import require_jwt
from minimcp.client.auth.oauth2 import OAuthClientProvider
from minimcp.client.auth.storage import TokenStorage
from minimcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from minimcp.shared.auth_utils import require_sync_methods
from minimcp.shared.exceptions import MCPDeprecationWarning

#: Given the audience (the authorization server's issuer), returns a signed JWT.
AssertionProvider = Callable[[str], str]


def checked_issuer(issuer: str | None) -> str | None:
    """An http(s) issuer, or ``None`` with the official SDK's deprecation warning."""
    if issuer is None:
        warnings.warn(
            "Omitting `issuer` is deprecated: without it the MCP server decides which authorization server "
            "receives this client's credentials. Pass issuer=<your authorization server's issuer URL>.",
            MCPDeprecationWarning,
            stacklevel=3,
        )
        return None
    if urlsplit(issuer).scheme not in ("http", "https"):
        raise ValueError(f"issuer must be the authorization server's http(s) issuer URL, got {issuer!r}")
    return issuer


class _ConfiguredClient(OAuthClientProvider):
    """A provider whose client record is fixed at construction (no registration) and which, given
    an issuer, only ever talks to that authorization server.

    Its grant is ``grant_type``; ``assertion_provider(audience)``, when given, makes the JWT that a
    subclass presents, the audience being the authorization server's issuer.
    """

    grant_type = "client_credentials"

    def __init__(
        self,
        server_url: str,
        storage: TokenStorage,
        client_id: str,
        *,
        auth_method: str,
        scope: str | None,
        issuer: str | None,
        client_secret: str | None = None,
        assertion_provider: AssertionProvider | None = None,
    ) -> None:
        require_sync_methods(assertion_provider, "assertion_provider")
        client_info = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=client_secret,
            grant_types=[self.grant_type],
            token_endpoint_auth_method=auth_method,
            scope=scope,
        )
        metadata = OAuthClientMetadata(redirect_uris=None, grant_types=client_info.grant_types, scope=scope)
        super().__init__(server_url, metadata, storage)
        self._fixed_client_info = client_info
        self._scope = scope
        self._issuer = issuer
        self._assertion_provider = assertion_provider

    def _initial_client_info(self) -> OAuthClientInformationFull:
        return self._fixed_client_info

    def _select_authorization_server(self, advertised: list[str]) -> str:
        if self._issuer is None:
            return advertised[0]
        return next((server for server in advertised if issuers_match(server, self._issuer)), advertised[0])

    def _require_configured_issuer(self) -> None:
        """Refuse to send credentials to an authorization server other than the configured one."""
        metadata = self.context.oauth_metadata
        if self._issuer is None or (metadata is not None and issuers_match(metadata.issuer, self._issuer)):
            return
        self.context.oauth_metadata = None
        self.context.clear_tokens()
        found = metadata.issuer if metadata is not None else "no authorization server metadata"
        raise OAuthFlowError(f"This client's credentials belong to {self._issuer}, and discovery led to {found}")

    def _assertion(self, audience: str) -> str:
        assert self._assertion_provider is not None
        return self._assertion_provider(audience)

    def _grant_fields(self) -> dict[str, str]:
        """What the token request carries beside ``grant_type`` and ``scope``."""
        return {}

    def _grant(self, scope: str | None) -> OAuthToken:
        self._require_configured_issuer()
        form = {"grant_type": self.grant_type, **self._grant_fields()}
        requested = self._scope or scope
        if requested:
            form["scope"] = requested
        return self._request_token(form)


class ClientCredentialsOAuthProvider(_ConfiguredClient):
    """The client credentials grant with ``client_id`` and ``client_secret`` (basic or post)."""

    def __init__(
        self,
        server_url: str,
        storage: TokenStorage,
        client_id: str,
        client_secret: str,
        token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
        scope: str | None = None,
        issuer: str | None = None,
    ) -> None:
        super().__init__(server_url, storage, client_id, auth_method=token_endpoint_auth_method, scope=scope,
                         issuer=checked_issuer(issuer), client_secret=client_secret)


def static_assertion_provider(token: str) -> AssertionProvider:
    """An assertion provider for a JWT made elsewhere (a workload identity token on disk, say)."""

    def provider(audience: str) -> str:
        return token

    return provider


class SignedJWTParameters(BaseModel):
    """What it takes to sign ``private_key_jwt`` assertions here (RFC 7523 §3 claims)."""

    issuer: str = Field(description="Issuer of the assertions (usually the client_id).")
    subject: str = Field(description="Subject of the assertions (usually the client_id).")
    signing_key: str = Field(description="The private key, PEM.", repr=False)
    signing_algorithm: str = Field(default="RS256", description="JWS algorithm, e.g. RS256 or ES256.")
    lifetime_seconds: int = Field(default=300, description="How long each assertion is valid.")
    additional_claims: dict[str, Any] | None = Field(default=None, description="More claims to include.")

    def create_assertion_provider(self) -> AssertionProvider:
        """A provider signing a fresh assertion (new ``jti``, current ``iat``) for each request."""
        jwt = require_jwt("private_key_jwt")

        def provider(audience: str) -> str:
            now = int(time.time())
            claims: dict[str, Any] = {
                "iss": self.issuer,
                "sub": self.subject,
                "aud": audience,
                "iat": now,
                "exp": now + self.lifetime_seconds,
                "jti": str(uuid.uuid4()),
            }
            claims.update(self.additional_claims or {})
            return jwt.encode(claims, self.signing_key, algorithm=self.signing_algorithm)

        return provider


class PrivateKeyJWTOAuthProvider(_ConfiguredClient):
    """The client credentials grant, authenticated by a signed JWT (``private_key_jwt``, RFC 7523 §2.2).

    ``assertion_provider(audience)`` returns the JWT; the audience is the authorization server's
    issuer. Build one with :meth:`SignedJWTParameters.create_assertion_provider`, or
    :func:`static_assertion_provider` for a token your platform issues.
    """

    def __init__(
        self,
        server_url: str,
        storage: TokenStorage,
        client_id: str,
        assertion_provider: AssertionProvider,
        scope: str | None = None,
        issuer: str | None = None,
    ) -> None:
        super().__init__(server_url, storage, client_id, auth_method="private_key_jwt", scope=scope,
                         issuer=checked_issuer(issuer), assertion_provider=assertion_provider)

    def _client_assertion(self, audience: str) -> str:
        return self._assertion(audience)


__all__ = [
    "AssertionProvider",
    "ClientCredentialsOAuthProvider",
    "PrivateKeyJWTOAuthProvider",
    "SignedJWTParameters",
    "static_assertion_provider",
]
