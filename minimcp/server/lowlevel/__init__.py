"""The low-level ``Server`` at the official import path ``mcp.server.lowlevel``.

The code lives in ``minimcp.server.core``; this package only re-exports, as do its modules
(``server``, and the documented ``outbox``, ``pending``, ``sessions``, ``workers``).
"""

from minimcp.server.core.hooks import ServerHooks
from minimcp.server.core.initialization import InitializationOptions, NotificationOptions
from minimcp.server.core.server import Server

__all__ = ["InitializationOptions", "NotificationOptions", "Server", "ServerHooks"]
