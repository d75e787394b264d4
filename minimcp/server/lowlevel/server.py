"""``Server``: the low-level tier, a handler per method, as the official ``mcp.server.lowlevel``.

The public path; the code lives in ``minimcp.server.core.server``."""

from minimcp.server.core.server import (
    HandlerEntry,
    InitializationOptions,
    NotificationOptions,
    Server,
)

__all__ = ["HandlerEntry", "InitializationOptions", "NotificationOptions", "Server"]
