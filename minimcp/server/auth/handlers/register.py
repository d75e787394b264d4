"""Dynamic client registration (RFC 7591 §3), when ``ClientRegistrationOptions(enabled=True)``.

A client that asks for no authentication method gets ``client_secret_post`` and a secret; a public
client (``none``) gets none. Registration is refused for what this server could never honour: a
``private_key_jwt`` client (it holds no client keys), a client without the ``code`` response type
or the ``authorization_code`` grant, scopes outside ``valid_scopes``, and the jwt-bearer grant
(an identity-assertion client is provisioned out of band).

Anyone may register, so what one registration may hold is bounded: the body (``MAX_BODY_BYTES``),
each text field (``FIELD_CHARS`` for ``client_name`` and ``scope``, ``MAX_FIELD_CHARS`` for the others), each
list (``MAX_LIST_ITEMS``; redirect URIs ``options.max_redirect_uris``), and the registrations one
address may make (``options.max_registrations_per_minute``, then 429 with ``Retry-After``).

A redirect URI is ``https``, or ``http`` on a loopback address (RFC 8252 §7.3, a native client's
local listener), without user information or a fragment (RFC 6749 §3.1.2). Other schemes are
refused (``javascript:``, ``data:``, ``file:``, and private-use schemes too: this server cannot
tell which application owns a scheme, so a code sent there may reach another one); so is plain
``http`` to any other host, where the code would cross the network in the clear.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.errors import stringify_pydantic_error
from minimcp.server.auth.json_response import NO_STORE, json_response
from minimcp.server.auth.provider import OAuthAuthorizationServerProvider, RegistrationError, RegistrationErrorCode
from minimcp.server.auth.rate_limit import RateLimiter
from minimcp.server.auth.settings import ClientRegistrationOptions
from minimcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata
from minimcp.shared.auth_utils import is_loopback_host

RegistrationRequest = OAuthClientMetadata

#: A real registration is a few hundred bytes; this leaves room for long URIs and several of them.
MAX_BODY_BYTES = 8 * 1024
#: The fields a site stores in columns of their own (Django: ``OAuthClient.name``, ``OAuthGrant.scope``);
#: ``client_name`` is also shown on the consent page.
FIELD_CHARS = {"client_name": 200, "scope": 500}
MAX_FIELD_CHARS = 2000
MAX_LIST_ITEMS = 10


class RegistrationErrorResponse(BaseModel):
    error: RegistrationErrorCode
    error_description: str | None = None


def _refuse(description: str, error: RegistrationErrorCode = "invalid_client_metadata",
            status: int = 400) -> Response:
    return json_response(RegistrationErrorResponse(error=error, error_description=description), status, NO_STORE)


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a registered redirect URI (see the module's docstring), or ``None``."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return (f"Redirect URI scheme '{scheme}' is not allowed: use https, or http on a loopback address "
                "(RFC 8252)")
    if not parts.hostname:
        return f"Redirect URI '{uri}' has no host"
    if scheme == "http" and not is_loopback_host(parts.hostname):
        return (f"Redirect URI '{uri}' is plain http to a host other than this machine: use https, "
                "or http on 127.0.0.1, [::1] or localhost (RFC 8252)")
    if "@" in parts.netloc:
        return f"Redirect URI '{uri}' must not carry user information"
    if parts.fragment or uri.endswith("#"):
        return f"Redirect URI '{uri}' must not have a fragment (RFC 6749 §3.1.2)"
    return None


def _oversized(metadata: OAuthClientMetadata, max_redirect_uris: int) -> str | None:
    """Which field of ``metadata`` is longer than this server keeps, or ``None``."""
    if metadata.redirect_uris is not None and len(metadata.redirect_uris) > max_redirect_uris:
        return f"At most {max_redirect_uris} redirect_uris may be registered"
    for name, value in metadata.model_dump(mode="json").items():
        if name == "jwks":  # a key set is bounded by the body alone
            continue
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) and name != "redirect_uris" and len(value) > MAX_LIST_ITEMS:
            return f"{name} may hold at most {MAX_LIST_ITEMS} entries"
        limit = FIELD_CHARS.get(name, MAX_FIELD_CHARS)
        if any(isinstance(item, str) and len(item) > limit for item in items):
            return f"{name} is longer than {limit} characters"
    return None


@dataclass
class RegistrationHandler:
    provider: OAuthAuthorizationServerProvider[Any, Any, Any]
    options: ClientRegistrationOptions
    #: Registrations per client address; ``None`` builds one from the options.
    limiter: RateLimiter | None = field(default=None)

    def __post_init__(self) -> None:
        if self.limiter is None and self.options.max_registrations_per_minute is not None:
            self.limiter = RateLimiter(self.options.max_registrations_per_minute, 60)

    def handle(self, request: Request) -> Response:
        wait = None if self.limiter is None else self.limiter.retry_after(request.remote_addr or "")
        if wait is not None:
            response = json_response({"error": "temporarily_unavailable", "error_description":
                                      f"Too many registrations from this address; try again in {wait} s"},
                                     429, NO_STORE)
            response.headers["Retry-After"] = str(wait)
            return response
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return _refuse(f"A registration is at most {MAX_BODY_BYTES} bytes", status=413)
        body = request.get_data()
        if len(body) > MAX_BODY_BYTES:
            return _refuse(f"A registration is at most {MAX_BODY_BYTES} bytes", status=413)
        try:
            metadata = OAuthClientMetadata.model_validate_json(body)
        except ValidationError as invalid:
            return _refuse(stringify_pydantic_error(invalid))
        too_long = _oversized(metadata, self.options.max_redirect_uris)
        if too_long is not None:
            return _refuse(too_long)
        for uri in metadata.redirect_uris or []:
            problem = redirect_uri_problem(str(uri))
            if problem is not None:
                return _refuse(problem, "invalid_redirect_uri")
        return self._register(metadata)

    def _register(self, metadata: OAuthClientMetadata) -> Response:
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
