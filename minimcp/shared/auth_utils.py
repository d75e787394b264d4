"""Resource indicators (RFC 8707), loopback hosts, token lifetimes and the sync check, shared by the
client and server halves."""

from __future__ import annotations

import inspect
import ipaddress
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import AnyUrl


def resource_url_from_server_url(url: str | AnyUrl) -> str:
    """The canonical resource identifier of an MCP server URL: lower-case scheme and host, no fragment."""
    parts = urlsplit(str(url))
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower(), fragment=""))


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a URL's host: ``localhost``, ``127.0.0.1``, ``[::1]``) is this machine, where
    plain HTTP never crosses the network (RFC 8252 §7.3, RFC 8414 §2's development exception)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


def require_sync_methods(obj: Any, role: str, protocol: type | None = None) -> None:
    """Refuse, when it is handed over, an auth object (or callback) with an ``async def`` where
    minimcp calls it: the methods ``protocol`` declares, or, without one, the callable itself.

    A coroutine method would return an unawaited coroutine where a token or a client is expected,
    and every request would then fail far from the cause; a half-ported program (an official SDK
    verifier, storage or provider kept beside ported code) is the usual source.
    """
    if obj is None:
        return
    if protocol is not None:
        named = {name: getattr(type(obj), name, None) for name in dir(protocol) if not name.startswith("_")}
    elif inspect.isroutine(obj):
        named = {getattr(obj, "__name__", role): obj}
    else:
        named = {"__call__": getattr(type(obj), "__call__", None)}
    for name, member in named.items():
        if inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member):
            raise TypeError(f"minimcp runs plain functions only: {role} {name!r} is declared 'async def'; "
                            "delete async/await when porting")


__all__ = ["calculate_token_expiry", "check_resource_allowed", "require_sync_methods",
           "resource_url_from_server_url"]
