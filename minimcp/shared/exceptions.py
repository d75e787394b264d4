"""The exceptions that travel between server and client, under the official import path."""

from minimcp.jsonrpc import MCPError, NoBackChannelError, UrlElicitationRequiredError


class MCPDeprecationWarning(DeprecationWarning):
    """Emitted by features the 2026-07-28 revision deprecates (protocol logging, sampling, roots)."""


__all__ = ["MCPDeprecationWarning", "MCPError", "NoBackChannelError", "UrlElicitationRequiredError"]
