"""OAuth 2.0 documents that travel between an MCP client, its server and their authorization server.

The models follow the RFCs field by field (RFC 6749 tokens, RFC 7591 client registration, RFC 8414
authorization server metadata, RFC 9728 protected resource metadata). Identifiers that are compared
as strings (``issuer``, ``resource``, ``authorization_servers``) are kept exactly as published:
parsing them into URL objects would add a ``/`` to ``https://as.example.com`` and turn a correct
issuer check into a failed one. Secrets are left out of ``repr`` so a logged model leaks nothing.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import AnyUrl, BaseModel, ConfigDict, Field, field_validator, model_validator

#: RFC 7523 JWT bearer grant: a signed JWT (workload identity, or an ID-JAG) traded for a token.
JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"

#: Token-endpoint client authentication methods a minimcp client can apply.
TokenEndpointAuthMethod = Literal["none", "client_secret_post", "client_secret_basic", "private_key_jwt"]

#: What a client registers for when it says nothing (RFC 7591 §2 defaults plus refresh).
DEFAULT_GRANT_TYPES = ["authorization_code", "refresh_token"]


def _http_url(value: Any) -> str:
    """An absolute http(s) URL, kept byte for byte; a pydantic URL object is accepted as its text."""
    text = str(value) if isinstance(value, AnyUrl) else value
    if not isinstance(text, str):
        raise ValueError("must be a URL string")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an absolute http(s) URL, got {text[:200]!r}")
    return text


def _placeholders_dropped(data: Any) -> Any:
    """Servers write unset members as ``null`` or ``""``; both mean the member is absent."""
    if isinstance(data, dict):
        return {key: value for key, value in data.items() if value is not None and value != ""}
    return data


class OAuthToken(BaseModel):
    """A token endpoint's answer (RFC 6749 §5.1); ``token_type`` is ``Bearer`` or ``DPoP`` (RFC 9449)."""

    model_config = ConfigDict(extra="allow")

    access_token: str = Field(repr=False, min_length=1)
    token_type: str = "Bearer"
    expires_in: int | None = None
    scope: str | None = None
    refresh_token: str | None = Field(default=None, repr=False)

    @field_validator("token_type", mode="before")
    @classmethod
    def _canonical_token_type(cls, value: Any) -> Any:
        # RFC 6749 §7.1: the type is case-insensitive; servers send "bearer" as often as "Bearer".
        if isinstance(value, str):
            return {"bearer": "Bearer", "dpop": "DPoP"}.get(value.lower(), value)
        return value


class AuthorizationCodeResult(BaseModel):
    """What the browser brought back to the redirect URI: the code, ``state`` and RFC 9207 ``iss``."""

    code: str = Field(repr=False)
    state: str | None = None
    iss: str | None = None


class InvalidScopeError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRedirectUriError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OAuthClientMetadataBase(BaseModel):
    """RFC 7591 §2 client metadata shared by the registration request and the server's record."""

    response_types: list[str] = ["code"]
    scope: str | None = None
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    contacts: list[str] | None = None
    tos_uri: str | None = None
    policy_uri: str | None = None
    jwks_uri: str | None = None
    jwks: Any | None = None
    software_id: str | None = None
    software_version: str | None = None

    @field_validator("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri", mode="before")
    @classmethod
    def _optional_url(cls, value: Any) -> Any:
        if value is None or value == "":
            return None
        return _http_url(value)


class OAuthClientMetadata(OAuthClientMetadataBase):
    """What a client sends to register itself (RFC 7591 §2)."""

    redirect_uris: list[AnyUrl] | None = Field(..., min_length=1)
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None
    grant_types: list[str] = Field(default_factory=lambda: list(DEFAULT_GRANT_TYPES))
    #: SEP-837: OIDC application type; MCP clients usually redirect to a loopback address.
    application_type: Literal["web", "native"] = "native"


class OAuthClientInformationFull(OAuthClientMetadataBase):
    """The authorization server's record of a registered client (RFC 7591 §3.2.1).

    A server may substitute any requested value, so the members it may rewrite accept any string.
    ``issuer`` is minimcp's own note of which authorization server issued these credentials
    (SEP-2352), never read from the wire: credentials are not carried to another server.
    """

    redirect_uris: list[AnyUrl] | None = None
    token_endpoint_auth_method: str | None = None
    grant_types: list[str] = Field(default_factory=lambda: list(DEFAULT_GRANT_TYPES))
    application_type: str | None = None
    client_id: str = Field(min_length=1)
    client_secret: str | None = Field(default=None, repr=False)
    client_id_issued_at: int | None = None
    client_secret_expires_at: int | None = None
    issuer: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _placeholders_read_as_absent(cls, data: Any) -> Any:
        return _placeholders_dropped(data)

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        if requested_scope is None:
            return None
        requested = requested_scope.split(" ")
        allowed = [] if self.scope is None else self.scope.split(" ")
        for scope in requested:
            if scope not in allowed:
                raise InvalidScopeError(f"Client was not registered with scope {scope}")
        return requested

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is not None:
            if not self.redirect_uris or redirect_uri not in self.redirect_uris:
                raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' not registered for client")
            return redirect_uri
        if self.redirect_uris and len(self.redirect_uris) == 1:
            return self.redirect_uris[0]
        raise InvalidRedirectUriError("redirect_uri must be specified unless the client has exactly one registered URI")


class OAuthMetadata(BaseModel):
    """RFC 8414 authorization server metadata (also what OpenID discovery publishes)."""

    model_config = ConfigDict(extra="allow")

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] = ["code"]
    response_modes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    token_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    service_documentation: str | None = None
    ui_locales_supported: list[str] | None = None
    op_policy_uri: str | None = None
    op_tos_uri: str | None = None
    revocation_endpoint: str | None = None
    revocation_endpoint_auth_methods_supported: list[str] | None = None
    revocation_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    introspection_endpoint: str | None = None
    introspection_endpoint_auth_methods_supported: list[str] | None = None
    introspection_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    client_id_metadata_document_supported: bool | None = None
    authorization_response_iss_parameter_supported: bool | None = None
    authorization_grant_profiles_supported: list[str] | None = None
    #: RFC 9449 §5.1: the JWS algorithms the server accepts in DPoP proofs.
    dpop_signing_alg_values_supported: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _placeholders_read_as_absent(cls, data: Any) -> Any:
        return _placeholders_dropped(data)

    @field_validator("issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint", mode="before")
    @classmethod
    def _endpoint(cls, value: Any) -> Any:
        return None if value is None else _http_url(value)


class ProtectedResourceMetadata(BaseModel):
    """RFC 9728 protected resource metadata: which authorization servers guard this resource."""

    model_config = ConfigDict(extra="allow")

    resource: str
    authorization_servers: list[str] = Field(..., min_length=1)
    jwks_uri: str | None = None
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = Field(default=["header"])
    resource_signing_alg_values_supported: list[str] | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None
    resource_policy_uri: str | None = None
    resource_tos_uri: str | None = None
    tls_client_certificate_bound_access_tokens: bool | None = None
    authorization_details_types_supported: list[str] | None = None
    dpop_signing_alg_values_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool | None = None

    @field_validator("resource", mode="before")
    @classmethod
    def _resource(cls, value: Any) -> Any:
        return _http_url(value)

    @field_validator("authorization_servers", mode="before")
    @classmethod
    def _servers(cls, value: Any) -> Any:
        return [_http_url(server) for server in value] if isinstance(value, list) else value


__all__ = [
    "DEFAULT_GRANT_TYPES",
    "JWT_BEARER_GRANT_TYPE",
    "AuthorizationCodeResult",
    "InvalidRedirectUriError",
    "InvalidScopeError",
    "OAuthClientInformationFull",
    "OAuthClientMetadata",
    "OAuthClientMetadataBase",
    "OAuthMetadata",
    "OAuthToken",
    "ProtectedResourceMetadata",
    "TokenEndpointAuthMethod",
]
