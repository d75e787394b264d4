"""Getting a ``client_id``: a Client ID Metadata Document URL, or dynamic registration (RFC 7591).

Pre-registered clients need neither: their record is put in :class:`TokenStorage` up front.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
from pydantic import ValidationError

from minimcp.client.auth.exceptions import OAuthRegistrationError
from minimcp.client.auth.wire import MAX_BODY_BYTES, json_object, oauth_error_text, read_limited
from minimcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata

#: Token endpoint authentication methods a registration may assign and this flow can apply.
USABLE_AUTH_METHODS = (None, "none", "client_secret_basic", "client_secret_post")
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def is_valid_client_metadata_url(url: str | None) -> bool:
    """A Client ID Metadata Document URL must be https with a path (the draft's rule)."""
    if not url:
        return False
    parts = urlsplit(url)
    return parts.scheme == "https" and parts.path not in ("", "/")


def should_use_client_metadata_url(metadata: OAuthMetadata | None, client_metadata_url: str | None) -> bool:
    """Use the URL as ``client_id`` only when the authorization server says it resolves such URLs."""
    return bool(client_metadata_url) and metadata is not None and metadata.client_id_metadata_document_supported is True


def client_info_from_metadata_url(client_metadata: OAuthClientMetadata, client_metadata_url: str) -> OAuthClientInformationFull:
    """The client record a metadata-document URL stands for: a public client, no secret."""
    return OAuthClientInformationFull(
        client_id=client_metadata_url,
        token_endpoint_auth_method="none",
        redirect_uris=client_metadata.redirect_uris,
        grant_types=client_metadata.grant_types,
    )


def register_client(
    http: requests.Session, registration_endpoint: str, client_metadata: OAuthClientMetadata, timeout: float
) -> OAuthClientInformationFull:
    """POST the client's metadata and return the record the server made of it (RFC 7591 §3)."""
    body = client_metadata.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        response = http.post(
            registration_endpoint, json=body, headers={"Accept": "application/json"}, timeout=timeout,
            allow_redirects=False, stream=True,
        )
    except requests.exceptions.RequestException as exc:
        raise OAuthRegistrationError(
            f"The registration endpoint {registration_endpoint} could not be reached ({exc.__class__.__name__})"
        ) from None
    try:
        content = read_limited(response)
    except ConnectionError as exc:
        raise OAuthRegistrationError(f"Registration at {registration_endpoint} broke off: {exc}") from None
    if response.status_code not in (200, 201):
        raise OAuthRegistrationError(
            f"Registration at {registration_endpoint} failed with HTTP {response.status_code}{oauth_error_text(content)}"
        )
    document = json_object(content) if len(content) <= MAX_BODY_BYTES else None
    try:
        if document is None:
            raise ValueError("not a JSON object")
        document.pop("issuer", None)  # ours to record, never the server's to claim
        client_info = OAuthClientInformationFull.model_validate(document)
    except (ValueError, ValidationError):
        raise OAuthRegistrationError(
            f"Registration at {registration_endpoint} answered something that is not a client record"
        ) from None
    check_registration_usable(client_info)
    return client_info


def check_registration_usable(client_info: OAuthClientInformationFull) -> None:
    """Refuse a registration this flow could not use (RFC 7591 §3.2.1 lets a server rewrite the request)."""
    method = client_info.token_endpoint_auth_method
    if method not in USABLE_AUTH_METHODS:
        raise OAuthRegistrationError(f"The authorization server registered the client for {method!r}, which this client cannot do")
    if method in _SECRET_METHODS and not client_info.client_secret:
        raise OAuthRegistrationError(f"The authorization server registered the client for {method!r} but issued no client_secret")


__all__ = [
    "check_registration_usable",
    "client_info_from_metadata_url",
    "is_valid_client_metadata_url",
    "register_client",
    "should_use_client_metadata_url",
]
