"""``ServerSession`` at the official SDK's import path (``mcp.server.session``); it lives with the
connection it is a view of, in ``minimcp.server.core.sessions``."""

from minimcp.server.core.sessions import ServerSession

__all__ = ["ServerSession"]
