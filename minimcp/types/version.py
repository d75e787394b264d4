"""The protocol versions, at the official import path ``mcp.types.version``."""

from __future__ import annotations

from minimcp.types import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

LATEST_MODERN_VERSION = MODERN_PROTOCOL_VERSIONS[-1]
KNOWN_PROTOCOL_VERSIONS: tuple[str, ...] = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
SUPPORTED_PROTOCOL_VERSIONS = KNOWN_PROTOCOL_VERSIONS
OLDEST_SUPPORTED_VERSION = KNOWN_PROTOCOL_VERSIONS[0]


def is_version_at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is a known revision no older than ``minimum``. An unknown peer version
    is treated as too old; an unknown ``minimum`` is a programming error (``ValueError``)."""
    if minimum not in KNOWN_PROTOCOL_VERSIONS:
        raise ValueError(f"minimum must be a known protocol version, got {minimum!r}")
    if version not in KNOWN_PROTOCOL_VERSIONS:
        return False
    return KNOWN_PROTOCOL_VERSIONS.index(version) >= KNOWN_PROTOCOL_VERSIONS.index(minimum)


__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "KNOWN_PROTOCOL_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "LATEST_MODERN_VERSION",
    "LATEST_PROTOCOL_VERSION",
    "MODERN_PROTOCOL_VERSIONS",
    "OLDEST_SUPPORTED_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "is_version_at_least",
]
