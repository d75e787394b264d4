"""The OAuth 2.1 documents both sides of an MCP connection read and write.

Authorization in MCP is plain OAuth: a client finds the server's protected-resource metadata
(RFC 9728), then its authorization server's metadata (RFC 8414), registers (RFC 7591), and trades
an authorization code for tokens (RFC 6749 with PKCE). These models are those documents, with the
field names of the RFCs; a client parses them and a server emits them, so they live here, beside
neither. They carry no behaviour beyond checking a client's own redirect URI and scopes, which an
authorization server needs and a client may use to check itself.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AnyHttpUrl, AnyUrl, BaseModel, ConfigDict, Field, field_validator, model_validator

#: RFC 7523: the grant type of a JWT presented as an authorization grant.
JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: What RFC 7591 §2 assumes when a client names no grant types, extended with refresh.
DEFAULT_GRANT_TYPES = ["authorization_code", "refresh_token"]

TokenEndpointAuthMethod = Literal["none", "client_secret_post", "client_secret_basic", "private_key_jwt"]


def _blank_as_missing(value: object) -> object:
    """Some servers write an optional URL as ``""``; it means the same as leaving it out."""
    return None if value == "" else value


class OAuthToken(BaseModel):
    """A token endpoint's success answer (RFC 6749 §5.1)."""

    access_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int | None = None
    scope: str | None = None
    refresh_token: str | None = None

    @field_validator("token_type", mode="before")
    @classmethod
    def _bearer_in_any_case(cls, value: object) -> object:
        # RFC 6749 §5.1: token_type is case-insensitive; servers send "bearer" as often as "Bearer".
        return value.title() if isinstance(value, str) else value


class InvalidScopeError(Exception):
    """A client asked for a scope it was not registered with."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRedirectUriError(Exception):
    """A client named a redirect URI it did not register, or none when it registered several."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OAuthClientMetadataBase(BaseModel):
    """The RFC 7591 §2 client metadata that a registration request and a registered client share."""

    model_config = ConfigDict(url_preserve_empty_path=True)

    response_types: list[str] = ["code"]
    scope: str | None = None
    client_name: str | None = None
    client_uri: AnyHttpUrl | None = None
    logo_uri: AnyHttpUrl | None = None
    contacts: list[str] | None = None
    tos_uri: AnyHttpUrl | None = None
    policy_uri: AnyHttpUrl | None = None
    jwks_uri: AnyHttpUrl | None = None
    jwks: Any | None = None
    software_id: str | None = None
    software_version: str | None = None

    @field_validator("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri", mode="before")
    @classmethod
    def _optional_url(cls, value: object) -> object:
        return _blank_as_missing(value)


class OAuthClientMetadata(OAuthClientMetadataBase):
    """What a client sends to a registration endpoint (RFC 7591 §3.1)."""

    redirect_uris: list[AnyUrl] | None = Field(..., min_length=1)
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None
    grant_types: list[str] = Field(default_factory=lambda: list(DEFAULT_GRANT_TYPES))
    application_type: Literal["web", "native"] = "native"


class OAuthClientInformationFull(OAuthClientMetadataBase):
    """A registered client: its metadata plus the credentials the authorization server issued
    (RFC 7591 §3.2.1). An authorization server may substitute values, so the fields a client
    requested narrowly are read here as any string; a member sent as ``null`` or ``""`` counts as
    absent, so its default applies."""

    redirect_uris: list[AnyUrl] | None = None
    token_endpoint_auth_method: str | None = None
    grant_types: list[str] = Field(default_factory=lambda: list(DEFAULT_GRANT_TYPES))
    application_type: str | None = None
    client_id: str
    client_secret: str | None = None
    client_id_issued_at: int | None = None
    client_secret_expires_at: int | None = None
    issuer: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _placeholders_absent(cls, data: object) -> object:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None and value != ""}
        return data

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        """The scopes of ``requested_scope``, each one registered; ``None`` when none were asked for."""
        if requested_scope is None:
            return None
        allowed = set(self.scope.split()) if self.scope else set()
        requested = requested_scope.split()
        for scope in requested:
            if scope not in allowed:
                raise InvalidScopeError(f"Client was not registered with scope {scope}")
        return requested

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        """The redirect URI to use: the one asked for if registered, or the only one registered."""
        if redirect_uri is not None:
            if not self.redirect_uris or redirect_uri not in self.redirect_uris:
                raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' not registered for client")
            return redirect_uri
        if self.redirect_uris and len(self.redirect_uris) == 1:
            return self.redirect_uris[0]
        raise InvalidRedirectUriError("redirect_uri must be specified unless the client has exactly one registered URI")


class OAuthMetadata(BaseModel):
    """An authorization server's metadata document (RFC 8414 §2)."""

    model_config = ConfigDict(url_preserve_empty_path=True)

    issuer: AnyHttpUrl
    authorization_endpoint: AnyHttpUrl
    token_endpoint: AnyHttpUrl
    registration_endpoint: AnyHttpUrl | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] = ["code"]
    response_modes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    token_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    service_documentation: AnyHttpUrl | None = None
    ui_locales_supported: list[str] | None = None
    op_policy_uri: AnyHttpUrl | None = None
    op_tos_uri: AnyHttpUrl | None = None
    revocation_endpoint: AnyHttpUrl | None = None
    revocation_endpoint_auth_methods_supported: list[str] | None = None
    revocation_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    introspection_endpoint: AnyHttpUrl | None = None
    introspection_endpoint_auth_methods_supported: list[str] | None = None
    introspection_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    client_id_metadata_document_supported: bool | None = None
    authorization_response_iss_parameter_supported: bool | None = None
    authorization_grant_profiles_supported: list[str] | None = None


class ProtectedResourceMetadata(BaseModel):
    """A protected resource's metadata document (RFC 9728 §2): which authorization servers issue
    its tokens and which scopes it knows. MCP accepts bearer tokens in the header only."""

    model_config = ConfigDict(url_preserve_empty_path=True)

    resource: AnyHttpUrl
    authorization_servers: list[AnyHttpUrl] = Field(..., min_length=1)
    jwks_uri: AnyHttpUrl | None = None
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = Field(default_factory=lambda: ["header"])
    resource_signing_alg_values_supported: list[str] | None = None
    resource_name: str | None = None
    resource_documentation: AnyHttpUrl | None = None
    resource_policy_uri: AnyHttpUrl | None = None
    resource_tos_uri: AnyHttpUrl | None = None
    tls_client_certificate_bound_access_tokens: bool | None = None
    authorization_details_types_supported: list[str] | None = None
    dpop_signing_alg_values_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool | None = None
