"""The server side, in three layers.

- ``lowlevel``: the sans-I/O protocol core (dispatch, era rules, sessions, rounds, subscriptions,
  waits) and the low-level ``Server``, one handler per method.
- ``mcpserver``: ``MCPServer``, the decorator tier, which registers its registries as the handlers
  of a low-level ``Server``.
- ``tasks``: the tasks extension (long tool calls on worker threads, and where tasks are kept).
- the modules directly here are the edges: transports that turn bytes into messages and back
  (``stdio``, ``streamable_http`` (the HTTP exchange without I/O) with its ``wsgi`` adapter and
  ``httpd``, ``memory``), plus the modules
  the official SDK keeps at this path (``context``, ``elicitation``, ``transport_security``).

A server's own options are small frozen objects, each declared once: ``Limits`` (workers and
each caller's share), ``TaskOptions`` (where tasks are kept, how many run), ``HTTPOptions`` (what
the HTTP endpoint serves and holds) and ``AuthOptions`` (how it is protected). Each field is also
a keyword of the constructor that takes the object (``MCPServer(max_workers=8)``).
"""

from minimcp.server.auth.options import AuthOptions
from minimcp.server.core.caching import CacheHint
from minimcp.server.core.context import ServerRequestContext
from minimcp.server.core.options import Limits
from minimcp.server.core.server import InitializationOptions, NotificationOptions, Server
from minimcp.server.app.server import MCPServer
from minimcp.server.app.tasks.options import TaskOptions
from minimcp.server.edges.http.options import HTTPOptions

__all__ = ["AuthOptions", "CacheHint", "HTTPOptions", "InitializationOptions", "Limits", "MCPServer",
           "NotificationOptions", "Server", "ServerRequestContext", "TaskOptions"]
