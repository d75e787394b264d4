"""``ServerSession`` at the official SDK's import path (``mcp.server.session``); it lives beside the
connection it is a view of, in ``minimcp.server.core.context``."""

from minimcp.server.core.context import ServerSession

__all__ = ["ServerSession"]
