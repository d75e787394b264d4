"""``Connection`` at the official path ``mcp.server.connection``: what the server knows of one client.

It is the core's own connection (``minimcp.server.core.sessions.Connection``), the one every
transport builds, so a handler's ``ctx.session.connection`` and one built by hand for ``serve_one`` /
``serve_connection`` (``Connection.from_envelope``, ``Connection.for_loop``) are the same class.
"""

from minimcp.server.core.sessions import Connection

__all__ = ["Connection"]
