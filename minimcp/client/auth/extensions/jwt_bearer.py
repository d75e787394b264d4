"""Workload identity federation: a JWT your platform issued, traded for an MCP token (RFC 7523 §2.1).

A workload on Kubernetes, a cloud VM or a CI runner holds a signed identity token; the MCP
authorization server trusts its issuer and trades it for an access token with the
``urn:ietf:params:oauth:grant-type:jwt-bearer`` grant (SEP-1933). A refusal (``invalid_grant``,
``invalid_scope``, ``unauthorized_client``) is raised as it is: the same assertion would be refused
again, and falling back to another grant would hide the misconfiguration.
"""

from __future__ import annotations

from typing import Literal

from minimcp.client.auth.extensions.client_credentials import AssertionProvider, _ConfiguredClient, checked_issuer
from minimcp.client.auth.storage import TokenStorage
from minimcp.shared.auth import JWT_BEARER_GRANT_TYPE


class JWTBearerOAuthProvider(_ConfiguredClient):
    """The JWT bearer grant: ``assertion_provider(audience)`` returns the JWT to present.

    The audience is the authorization server's issuer; use
    :func:`~minimcp.client.auth.extensions.client_credentials.static_assertion_provider` for a
    token read from a file or the environment. Without ``client_secret`` the client is public
    (the assertion alone identifies the workload); with one it also authenticates itself.
    """

    grant_type = JWT_BEARER_GRANT_TYPE

    def __init__(
        self,
        server_url: str,
        storage: TokenStorage,
        client_id: str,
        assertion_provider: AssertionProvider,
        scope: str | None = None,
        issuer: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"] | None = None,
    ) -> None:
        super().__init__(
            server_url, storage, client_id, scope=scope, issuer=checked_issuer(issuer), client_secret=client_secret,
            auth_method=token_endpoint_auth_method or ("client_secret_basic" if client_secret else "none"),
            assertion_provider=assertion_provider,
        )

    def _grant_fields(self) -> dict[str, str]:
        return {"assertion": self._assertion(self._audience())}


__all__ = ["JWTBearerOAuthProvider"]
