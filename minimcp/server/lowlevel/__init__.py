"""The low-level ``Server`` at the official import path ``mcp.server.lowlevel``.

The code lives in ``minimcp.server.core``; this package only re-exports, as do its modules
(``server``, and the documented ``outbox``, ``pending``, ``sessions``, ``workers``).
"""

from minimcp.server.core.server import InitializationOptions, NotificationOptions, Server, ServerHooks

__all__ = ["InitializationOptions", "NotificationOptions", "Server", "ServerHooks"]
