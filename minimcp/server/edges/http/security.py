"""DNS-rebinding protection: which ``Host`` and ``Origin`` values an HTTP endpoint accepts.

A browser page on a hostile site can resolve its own name to 127.0.0.1 and talk to a local
server; checking ``Host`` (and ``Origin`` when a browser sends one) stops it. By default only
loopback names are accepted, on any port. An entry ``"name:*"`` matches any port.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

_LOOPBACK = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


@dataclass
class TransportSecuritySettings:
    enable_dns_rebinding_protection: bool = True
    allowed_hosts: list[str] = field(default_factory=lambda: list(_LOOPBACK))
    allowed_origins: list[str] = field(
        default_factory=lambda: [f"{scheme}://{host}" for scheme in ("http", "https") for host in _LOOPBACK]
    )

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Which of a request's ``Host`` and ``Origin`` these settings refuse (``"Host"``,
        ``"Origin"``), else ``None``: both questions in one, as the exchange asks them of every request."""
        if not self.enable_dns_rebinding_protection:
            return None
        if not host_allowed(self, host):
            return "Host"
        return None if origin_allowed(self, origin) else "Origin"


def _matches(value: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith(":*"):
            stem = pattern[:-2]
            if value == stem or (value.startswith(stem + ":") and value[len(stem) + 1:].isdigit()):
                return True
        elif value == pattern:
            return True
    return False


def host_allowed(settings: TransportSecuritySettings, host: str | None) -> bool:
    if not settings.enable_dns_rebinding_protection:
        return True
    return host is not None and _matches(host.lower(), settings.allowed_hosts)


def origin_allowed(settings: TransportSecuritySettings, origin: str | None) -> bool:
    """An absent ``Origin`` (a non-browser client) is fine; a present one must be allowed."""
    if not settings.enable_dns_rebinding_protection or origin is None:
        return True
    parts = urlsplit(origin.lower())
    return bool(parts.scheme and parts.netloc) and _matches(f"{parts.scheme}://{parts.netloc}",
                                                             settings.allowed_origins)
