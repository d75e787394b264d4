"""How a server is protected: who issues its tokens, what it is, and which scopes every call needs.

``AuthSettings`` is the one object ``MCPServer(auth=...)`` takes; the authorization-server tier
reads the registration and revocation options from it as well.
"""

from __future__ import annotations

import warnings

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, model_validator

from minimcp.shared.exceptions import MCPDeprecationWarning


class ClientRegistrationOptions(BaseModel):
    """Dynamic client registration (RFC 7591) on the built-in authorization server.

    Registration is anonymous, so it is bounded: at most ``max_redirect_uris`` redirect URIs per
    client, and ``max_registrations_per_minute`` registrations from one client address (``None``:
    no rate; behind a reverse proxy, make the proxy's client address the WSGI ``REMOTE_ADDR``).
    The body and field sizes are fixed (``handlers/register.py``); how many registrations are kept,
    and for how long while no user has allowed them, is the provider's to bound.
    """

    enabled: bool = False
    client_secret_expiry_seconds: int | None = None
    valid_scopes: list[str] | None = None
    default_scopes: list[str] | None = None
    max_redirect_uris: int = Field(default=10, ge=1)
    max_registrations_per_minute: int | None = Field(default=10, ge=1)


class RevocationOptions(BaseModel):
    """Token revocation (RFC 7009) on the built-in authorization server."""

    enabled: bool = False


class AuthSettings(BaseModel):
    """The protection of one MCP endpoint.

    ``issuer_url`` is the authorization server that issues tokens for this server (the built-in one
    when ``auth_server_provider=`` is given); ``resource_server_url`` is this server's own URL, the
    resource its tokens must be issued for and the base of its protected-resource metadata;
    ``required_scopes`` must all be held by every token.
    """

    # An issuer is compared as an exact string (RFC 8414 §3.3, RFC 9207), so a path-less URL keeps
    # its spelling: no trailing slash appears that the authorization server never wrote.
    model_config = ConfigDict(url_preserve_empty_path=True)

    issuer_url: AnyHttpUrl
    service_documentation_url: AnyHttpUrl | None = None
    client_registration_options: ClientRegistrationOptions | None = None
    revocation_options: RevocationOptions | None = None
    required_scopes: list[str] | None = None
    identity_assertion_enabled: bool = False
    resource_server_url: AnyHttpUrl | None = Field(...)
    validate_token_resource: bool | None = Field(
        default=None,
        description="Refuse a token whose AccessToken.resource (its RFC 8707 resource indicator) is not "
        "resource_server_url. Leave it False when the token verifier checks the audience itself.",
    )

    @model_validator(mode="after")
    def _resource_check_needs_a_resource(self) -> AuthSettings:
        if self.validate_token_resource and self.resource_server_url is None:
            raise ValueError("validate_token_resource requires resource_server_url")
        if self.validate_token_resource is None and self.resource_server_url is not None:
            warnings.warn(
                "AuthSettings.validate_token_resource is not set, so bearer tokens are not checked against "
                "resource_server_url. Set it to True to refuse tokens issued for another resource, or to False "
                "when your TokenVerifier checks the token's audience itself (JWTVerifier does).",
                MCPDeprecationWarning,
                stacklevel=3,
            )
        return self
