"""Finding out who guards an MCP server and how to talk to them.

Two documents, each tried at a list of addresses in the order the specification gives:

1. Protected Resource Metadata (RFC 9728) names the resource and its authorization servers: first
   the URL from ``WWW-Authenticate``'s ``resource_metadata``, then the path-aware well-known
   (``/.well-known/oauth-protected-resource/mcp``), then the root well-known. A server without any
   (the 2025-03-26 revision) is its own authorization server.
2. Authorization server metadata: RFC 8414 first, then OpenID discovery; for an issuer with a path,
   both path-aware forms and the OpenID path-appended form, never the root (which belongs to
   another tenant). The document's ``issuer`` must equal the issuer it was looked up for, string
   for string (RFC 8414 §3.3): metadata naming someone else is refused, not used.

A 404 (or any 4xx, or a redirect, which is not followed) means "not here, try the next address".
A 5xx says nothing about where the document lives, so it stops discovery with an error instead of
sending the client down a fallback path. A 200 whose body is HTML, truncated, or not the document
is remembered and reported if nothing better turns up.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
from pydantic import BaseModel, ValidationError

from minimcp.client.auth.exceptions import OAuthFlowError
from minimcp.client.auth.wire import MAX_BODY_BYTES, read_limited
from minimcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from minimcp.types import LATEST_PROTOCOL_VERSION

logger = logging.getLogger("minimcp.client.auth")


M = TypeVar("M", bound=BaseModel)


def origin(url: str) -> str:
    """``scheme://authority`` of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def protected_resource_metadata_urls(www_authenticate_url: str | None, server_url: str) -> list[str]:
    """Where to look for protected resource metadata, in order (RFC 9728 §3.1, MCP SEP-985)."""
    urls = [www_authenticate_url] if www_authenticate_url else []
    path = urlsplit(server_url).path
    if path and path != "/":
        urls.append(f"{origin(server_url)}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin(server_url)}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def authorization_server_metadata_urls(issuer: str | None, server_url: str) -> list[str]:
    """Where to look for authorization server metadata, in order.

    Without an issuer (no protected resource metadata) the 2025-03-26 rule applies: the MCP
    server's origin is the authorization server.
    """
    if not issuer:
        return [f"{origin(server_url)}/.well-known/oauth-authorization-server"]
    base, path = origin(issuer), urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [f"{base}/.well-known/oauth-authorization-server", f"{base}/.well-known/openid-configuration"]


def issuers_match(a: str, b: str) -> bool:
    """Simple string comparison (RFC 3986 §6.2.1), except that a bare origin with and without its
    trailing ``/`` is the same issuer: ``https://as.example.com`` and ``https://as.example.com/``."""
    if a == b:
        return True
    shorter, longer = sorted((a, b), key=len)
    return longer == shorter + "/" and shorter == origin(shorter)


@dataclass
class Fetched:
    """One metadata address tried: its status and either the parsed JSON object or what was wrong."""

    url: str
    status: int
    document: dict[str, Any] | None = None
    problem: str | None = None


def fetch_json(http: requests.Session, url: str, timeout: float) -> Fetched:
    """GET one metadata address without following redirects, reading at most ``MAX_BODY_BYTES``."""
    headers = {"Accept": "application/json", "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}
    try:
        response = http.get(url, headers=headers, timeout=timeout, allow_redirects=False, stream=True)
    except requests.exceptions.RequestException as exc:
        raise OAuthFlowError(f"Could not fetch {url}: {exc.__class__.__name__}") from None
    if response.status_code != 200:
        response.close()
        return Fetched(url, response.status_code)
    try:
        body = read_limited(response)
    except ConnectionError as exc:
        return Fetched(url, 200, problem=str(exc))
    if len(body) > MAX_BODY_BYTES:
        return Fetched(url, 200, problem=f"the document is larger than {MAX_BODY_BYTES} bytes")
    content_type = response.headers.get("Content-Type", "")
    try:
        document = json.loads(body)
    except ValueError:
        if "html" in content_type.lower() or body.lstrip()[:1] == b"<":
            return Fetched(url, 200, problem="it is an HTML page, not JSON metadata")
        return Fetched(url, 200, problem="it is not valid JSON (empty or truncated?)")
    if not isinstance(document, dict):
        return Fetched(url, 200, problem="it is JSON but not an object")
    return Fetched(url, 200, document=document)


def _parse(fetched: Fetched, model: type[M], what: str) -> M | None:
    if fetched.document is None:
        return None
    try:
        return model.model_validate(fetched.document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        fetched.problem = f"it is not valid {what} ({where}: {first['msg']})"
        return None


def _refuse_server_error(fetched: Fetched, what: str) -> None:
    if fetched.status >= 500 or fetched.status == 429:
        raise OAuthFlowError(
            f"{what} request to {fetched.url} failed with HTTP {fetched.status}; the server may be down, try again later"
        )


def _problems(tried: list[Fetched]) -> str:
    return "; ".join(f"{f.url}: {f.problem}" for f in tried if f.problem)


def _first_document(
    http: requests.Session, urls: list[str], timeout: float, model: type[M], what: str
) -> tuple[str, M | None, list[Fetched]]:
    """The first of ``urls`` (in the spec's order) holding a valid ``model``, its address, and every
    answer read. A 5xx or 429 stops the search (the server is failing, not absent); a document that
    is not ``model`` is logged and passed over."""
    tried: list[Fetched] = []
    for url in urls:
        fetched = fetch_json(http, url, timeout)
        tried.append(fetched)
        _refuse_server_error(fetched, what[0].upper() + what[1:])
        metadata = _parse(fetched, model, what)
        if metadata is not None:
            return url, metadata, tried
        if fetched.problem:
            logger.warning("Ignoring %s at %s: %s", what, url, fetched.problem)
    return "", None, tried


def discover_protected_resource(
    http: requests.Session, server_url: str, www_authenticate_url: str | None, timeout: float
) -> ProtectedResourceMetadata | None:
    """The resource's metadata, or ``None`` when it publishes none (every address said 4xx)."""
    _, metadata, tried = _first_document(http, protected_resource_metadata_urls(www_authenticate_url, server_url),
                                         timeout, ProtectedResourceMetadata, "protected resource metadata")
    if metadata is None and any(f.problem for f in tried):
        raise OAuthFlowError(f"No usable protected resource metadata for {server_url}: {_problems(tried)}")
    return metadata


def discover_authorization_server(
    http: requests.Session, issuer: str | None, server_url: str, timeout: float
) -> OAuthMetadata | None:
    """The authorization server's metadata, checked to name ``issuer``.

    ``None`` only on the legacy path (no issuer known) when the MCP server publishes nothing: the
    caller then falls back to the default ``/authorize``, ``/token`` and ``/register`` endpoints.
    """
    expected = issuer or origin(server_url)
    url, metadata, tried = _first_document(http, authorization_server_metadata_urls(issuer, server_url), timeout,
                                           OAuthMetadata, "authorization server metadata")
    if metadata is not None:
        if not issuers_match(metadata.issuer, expected):
            raise OAuthFlowError(
                f"Authorization server metadata at {url} names issuer {metadata.issuer!r}, not {expected!r}; "
                "refusing to use it (RFC 8414 §3.3)"
            )
        return metadata
    if issuer is not None or any(f.problem for f in tried):
        detail = _problems(tried) or "every address answered " + ", ".join(str(f.status) for f in tried)
        raise OAuthFlowError(f"No usable authorization server metadata for {expected}: {detail}")
    return None


def select_scope(
    www_authenticate_scope: str | None,
    resource_metadata: ProtectedResourceMetadata | None,
    server_metadata: OAuthMetadata | None,
    grant_types: list[str] | None,
) -> str | None:
    """The scope to ask for: the challenge's, else the resource's ``scopes_supported``, else the
    authorization server's, else none at all. ``offline_access`` joins only when the server lists
    it and this client can use a refresh token (SEP-2207)."""
    scope: str | None = None
    if www_authenticate_scope is not None:
        scope = www_authenticate_scope
    elif resource_metadata is not None and resource_metadata.scopes_supported is not None:
        scope = " ".join(resource_metadata.scopes_supported)
    elif server_metadata is not None and server_metadata.scopes_supported is not None:
        scope = " ".join(server_metadata.scopes_supported)
    if (
        scope
        and server_metadata is not None
        and "offline_access" in (server_metadata.scopes_supported or [])
        and "refresh_token" in (grant_types or [])
        and "offline_access" not in scope.split()
    ):
        scope += " offline_access"
    return scope


def union_scopes(previous: str | None, new: str | None) -> str | None:
    """Both scope lists, previous first, each scope once (SEP-2350: a step-up keeps what was granted)."""
    merged = list(dict.fromkeys((previous or "").split() + (new or "").split()))
    return " ".join(merged) or None


__all__ = [
    "Fetched",
    "authorization_server_metadata_urls",
    "discover_authorization_server",
    "discover_protected_resource",
    "fetch_json",
    "issuers_match",
    "origin",
    "protected_resource_metadata_urls",
    "select_scope",
    "union_scopes",
]
