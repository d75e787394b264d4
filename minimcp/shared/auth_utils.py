"""Resource indicators (RFC 8707) and token lifetimes, shared by the client and server halves."""

from __future__ import annotations

import time
from urllib.parse import urlsplit, urlunsplit

from pydantic import AnyUrl


def resource_url_from_server_url(url: str | AnyUrl) -> str:
    """The canonical resource identifier of an MCP server URL: lower-case scheme and host, no fragment."""
    parts = urlsplit(str(url))
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower(), fragment=""))


def check_resource_allowed(requested_resource: str, configured_resource: str) -> bool:
    """Whether a token for ``configured_resource`` covers ``requested_resource``.

    Same origin, and the configured path is the requested path or one of its parents, compared on
    whole segments: ``/api`` covers ``/api/v1`` but not ``/api123``.
    """
    requested, configured = urlsplit(requested_resource), urlsplit(configured_resource)
    if (requested.scheme.lower(), requested.netloc.lower()) != (configured.scheme.lower(), configured.netloc.lower()):
        return False
    requested_path = requested.path if requested.path.endswith("/") else requested.path + "/"
    configured_path = configured.path if configured.path.endswith("/") else configured.path + "/"
    return requested_path.startswith(configured_path)


def calculate_token_expiry(expires_in: int | str | None) -> float | None:
    """The wall-clock second a token stops working, or ``None`` when the server gave no lifetime."""
    if expires_in is None:
        return None
    return time.time() + int(expires_in)


__all__ = ["calculate_token_expiry", "check_resource_allowed", "resource_url_from_server_url"]
