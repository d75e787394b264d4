"""The server side, in three layers.

- ``lowlevel``: the sans-I/O protocol core (dispatch, sessions, rounds, subscriptions, waits).
- ``mcpserver``: ``MCPServer``, the decorator tier built on the core.
- ``tasks``: the tasks extension (long tool calls on worker threads, and where tasks are kept).
- the modules directly here are the edges: transports that turn bytes into messages and back
  (``stdio``, ``wsgi`` with its ``headers`` binding and ``httpd``, ``memory``), plus the modules
  the official SDK keeps at this path (``elicitation``, ``transport_security``).
"""

from minimcp.server.mcpserver.server import MCPServer

__all__ = ["MCPServer"]
