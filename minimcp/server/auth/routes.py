"""The authorization routes a protected server adds beside its MCP endpoint.

``create_protected_resource_routes`` serves the RFC 9728 metadata that tells a client where to get
a token; ``create_auth_routes`` the built-in authorization server (metadata, ``/authorize``,
``/token``, and ``/register`` and ``/revoke`` when enabled). Each route is ``(path, methods,
handler)`` with ``handler(werkzeug.Request) -> werkzeug.Response``, the shape of
``@mcp.custom_route``. The endpoints a browser-based client calls directly answer CORS preflights;
``/authorize`` does not (a browser navigates to it). Form bodies are capped, as the MCP endpoint's is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from pydantic import AnyHttpUrl
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Request, Response

from minimcp.server.auth.handlers.authorize import AuthorizationHandler
from minimcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from minimcp.server.auth.handlers.register import RegistrationHandler
from minimcp.server.auth.handlers.revoke import RevocationHandler
from minimcp.server.auth.handlers.token import TokenHandler
from minimcp.server.auth.middleware.client_auth import ClientAuthenticator
from minimcp.server.auth.provider import OAuthAuthorizationServerProvider
from minimcp.server.auth.rate_limit import RateLimiter
from minimcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from minimcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthMetadata, ProtectedResourceMetadata
from minimcp.shared.auth_utils import is_loopback_host

logger = logging.getLogger("minimcp.server.auth")

AUTHORIZATION_PATH = "/authorize"
TOKEN_PATH = "/token"
REGISTRATION_PATH = "/register"
REVOCATION_PATH = "/revoke"
ID_JAG_GRANT_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag"
#: An authorization form or a registration is a few kilobytes.
MAX_FORM_BYTES = 64 * 1024

Handler = Callable[[Request], Response]


class Route(NamedTuple):
    path: str
    methods: list[str]
    endpoint: Handler


def validate_issuer_url(url: AnyHttpUrl) -> None:
    """RFC 8414 §2: an issuer is HTTPS (loopback HTTP allowed for development) with no query or fragment."""
    if url.scheme != "https" and not is_loopback_host(url.host or ""):
        raise ValueError("Issuer URL must be HTTPS")
    if url.fragment:
        raise ValueError("Issuer URL must not have a fragment")
    if url.query:
        raise ValueError("Issuer URL must not have a query string")


def _guarded(handler: Handler, cors_methods: list[str] | None) -> Handler:
    """``handler`` with a body limit, a clear 4xx for bad HTTP, and CORS when ``cors_methods`` is set."""

    def endpoint(request: Request) -> Response:
        if cors_methods is not None and request.method == "OPTIONS":
            response = Response(status=204)
        else:
            request.max_content_length = MAX_FORM_BYTES
            request.max_form_memory_size = MAX_FORM_BYTES
            try:
                response = handler(request)
            except HTTPException as refused:
                response = refused.get_response()
        if cors_methods is not None:
            response.headers["Access-Control-Allow-Origin"] = "*"
            response.headers["Access-Control-Allow-Methods"] = ", ".join(cors_methods)
            response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, MCP-Protocol-Version"
        return response

    return endpoint


def _under(base: AnyHttpUrl, path: str) -> str:
    return str(base).rstrip("/") + path


def _text(url: AnyHttpUrl | None) -> str | None:
    return None if url is None else str(url)


def build_metadata(
    issuer_url: AnyHttpUrl,
    service_documentation_url: AnyHttpUrl | None,
    client_registration_options: ClientRegistrationOptions,
    revocation_options: RevocationOptions,
    supports_identity_assertion: bool = False,
    supports_iss_parameter: bool = False,
) -> OAuthMetadata:
    """The RFC 8414 document. ``supports_iss_parameter`` advertises RFC 9207: a client then refuses
    any authorization response without ``iss``, so it is said only when every redirect carries it."""
    grant_types = ["authorization_code", "refresh_token"]
    if supports_identity_assertion:
        grant_types.append(JWT_BEARER_GRANT_TYPE)
    client_auth_methods = ["client_secret_post", "client_secret_basic", "none"]
    return OAuthMetadata(
        issuer=str(issuer_url),
        authorization_endpoint=_under(issuer_url, AUTHORIZATION_PATH),
        token_endpoint=_under(issuer_url, TOKEN_PATH),
        registration_endpoint=(_under(issuer_url, REGISTRATION_PATH)
                               if client_registration_options.enabled else None),
        scopes_supported=client_registration_options.valid_scopes,
        response_types_supported=["code"],
        grant_types_supported=grant_types,
        token_endpoint_auth_methods_supported=client_auth_methods,
        service_documentation=_text(service_documentation_url),
        revocation_endpoint=_under(issuer_url, REVOCATION_PATH) if revocation_options.enabled else None,
        revocation_endpoint_auth_methods_supported=client_auth_methods if revocation_options.enabled else None,
        code_challenge_methods_supported=["S256"],
        authorization_response_iss_parameter_supported=True if supports_iss_parameter else None,
        authorization_grant_profiles_supported=[ID_JAG_GRANT_PROFILE] if supports_identity_assertion else None,
    )


def create_auth_routes(
    provider: OAuthAuthorizationServerProvider[Any, Any, Any],
    issuer_url: AnyHttpUrl,
    service_documentation_url: AnyHttpUrl | None = None,
    client_registration_options: ClientRegistrationOptions | None = None,
    revocation_options: RevocationOptions | None = None,
    identity_assertion_enabled: bool = False,
    registration_limiter: RateLimiter | None = None,
) -> list[Route]:
    """The built-in authorization server's routes, at the issuer's path (RFC 8414 §3.1 for the metadata).

    ``registration_limiter`` counts registrations per client address; routes rebuilt for every
    request (a site's, whose issuer is the request's host) pass one that outlives them.
    """
    validate_issuer_url(issuer_url)
    registration = client_registration_options or ClientRegistrationOptions()
    revocation = revocation_options or RevocationOptions()
    metadata = build_metadata(issuer_url, service_documentation_url, registration, revocation,
                              identity_assertion_enabled,
                              getattr(provider, "authorization_response_iss_parameter_supported", False) is True)
    authenticator = ClientAuthenticator(provider)
    issuer_path = (urlsplit(str(issuer_url)).path or "").rstrip("/")
    routes = [
        Route("/.well-known/oauth-authorization-server" + issuer_path, ["GET", "OPTIONS"],
              _guarded(MetadataHandler(metadata).handle, ["GET", "OPTIONS"])),
        Route(issuer_path + AUTHORIZATION_PATH, ["GET", "POST"],
              _guarded(AuthorizationHandler(provider, str(metadata.issuer)).handle, None)),
        Route(issuer_path + TOKEN_PATH, ["POST", "OPTIONS"],
              _guarded(TokenHandler(provider, authenticator, identity_assertion_enabled).handle, ["POST", "OPTIONS"])),
    ]
    if registration.enabled:
        routes.append(Route(issuer_path + REGISTRATION_PATH, ["POST", "OPTIONS"],
                            _guarded(RegistrationHandler(provider, registration, registration_limiter).handle,
                                     ["POST", "OPTIONS"])))
    if revocation.enabled:
        routes.append(Route(issuer_path + REVOCATION_PATH, ["POST", "OPTIONS"],
                            _guarded(RevocationHandler(provider, authenticator).handle, ["POST", "OPTIONS"])))
    return routes


def build_resource_metadata_url(resource_server_url: AnyHttpUrl) -> AnyHttpUrl:
    """Where RFC 9728 §3.1 puts a resource's metadata: the well-known path, then the resource's path.

    ``https://example.com/mcp`` -> ``https://example.com/.well-known/oauth-protected-resource/mcp``
    """
    parts = urlsplit(str(resource_server_url))
    path = "" if parts.path == "/" else parts.path
    return AnyHttpUrl(f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{path}")


def create_protected_resource_routes(
    resource_url: AnyHttpUrl,
    authorization_servers: list[AnyHttpUrl],
    scopes_supported: list[str] | None = None,
    resource_name: str | None = None,
    resource_documentation: AnyHttpUrl | None = None,
) -> list[Route]:
    """The protected-resource metadata, at its RFC 9728 path and, for a resource with a path, at the
    bare well-known path too (where clients of older drafts look first)."""
    metadata = ProtectedResourceMetadata(
        resource=str(resource_url), authorization_servers=[str(server) for server in authorization_servers],
        scopes_supported=scopes_supported, resource_name=resource_name,
        resource_documentation=_text(resource_documentation),
    )
    endpoint = _guarded(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
    paths = dict.fromkeys([urlsplit(str(build_resource_metadata_url(resource_url))).path,
                           "/.well-known/oauth-protected-resource"])
    return [Route(path, ["GET", "OPTIONS"], endpoint) for path in paths]
