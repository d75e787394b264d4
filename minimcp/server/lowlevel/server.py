"""``Server``: the low-level tier, a handler per method, as the official ``mcp.server.lowlevel``.

The public path; the code lives in ``minimcp.server.core.server``, ``minimcp.server.core.hooks``
and ``minimcp.server.core.initialization``."""

from minimcp.server.core.hooks import HandlerEntry
from minimcp.server.core.initialization import InitializationOptions, NotificationOptions
from minimcp.server.core.server import Server

__all__ = ["HandlerEntry", "InitializationOptions", "NotificationOptions", "Server"]
