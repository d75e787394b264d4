"""Who is calling the token and revocation endpoints: client authentication (RFC 6749 §2.3).

A confidential client proves itself with its secret, in an HTTP Basic header
(``client_secret_basic``) or in the form body (``client_secret_post``); a public client
(``none``) names itself with ``client_id`` and proves nothing here: PKCE protects its code. A client
that holds a secret may send it either way, but only one way per request, and secrets are compared
in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from typing import Any
from urllib.parse import unquote

from werkzeug.wrappers import Request

from minimcp.server.auth.provider import OAuthAuthorizationServerProvider
from minimcp.shared.auth import OAuthClientInformationFull


class AuthenticationError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _basic_credentials(header: str) -> tuple[str, str] | None:
    """``(client_id, secret)`` from an ``Authorization: Basic`` header (both form-urlencoded, RFC 6749 §2.3.1)."""
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise AuthenticationError("Invalid Basic authentication header") from None
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        raise AuthenticationError("Invalid Basic authentication header")
    return unquote(client_id), unquote(secret)


class ClientAuthenticator:
    def __init__(self, provider: OAuthAuthorizationServerProvider[Any, Any, Any]) -> None:
        self.provider = provider

    def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        """The client the request authenticates as, or an ``AuthenticationError`` saying what is wrong."""
        form = request.form
        basic = _basic_credentials(request.headers.get("Authorization", ""))
        posted_secret = form.get("client_secret")
        if basic is not None and posted_secret is not None:
            raise AuthenticationError("Use one client authentication method, not both Basic and client_secret")
        client_id = form.get("client_id")
        if basic is not None:
            if client_id is not None and client_id != basic[0]:
                raise AuthenticationError("Client ID mismatch in Basic auth")
            client_id = basic[0]
        if not client_id:
            raise AuthenticationError("Missing client_id")
        client = self.provider.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        secret = basic[1] if basic is not None else posted_secret
        if client.token_endpoint_auth_method == "none" and not client.client_secret:
            return client
        if not client.client_secret:
            raise AuthenticationError("Client is registered for secret-based authentication but has no stored secret")
        if not secret:
            raise AuthenticationError("Client secret is required")
        if not hmac.compare_digest(client.client_secret.encode(), secret.encode()):
            raise AuthenticationError("Invalid client_secret")
        if client.client_secret_expires_at and client.client_secret_expires_at < time.time():
            raise AuthenticationError("Client secret has expired")
        return client

    def authenticated_form(self, request: Request) -> tuple[OAuthClientInformationFull, dict[str, str]]:
        """The authenticated client and the request's form, which names that client even when only
        the Basic header did; raises ``AuthenticationError`` like ``authenticate_request``."""
        client = self.authenticate_request(request)
        form = request.form.to_dict()
        form.setdefault("client_id", client.client_id)
        return client, form
