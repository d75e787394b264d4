"""``ServerSession`` at the official SDK's import path (``mcp.server.session``); it lives with the
connection it is a view of, in ``minimcp.server.lowlevel.sessions``."""

from minimcp.server.lowlevel.sessions import ServerSession

__all__ = ["ServerSession"]
