"""The server side, by layer.

- ``core``: the sans-I/O protocol core and the low-level ``Server``;
- ``app``: ``MCPServer``, the decorator tier, and the features built on it (tasks, OpenAPI, apps);
- ``edges``: Streamable HTTP without I/O, and the WSGI, stdio and in-memory adapters;
- ``backends``: what outlives a request (memory, Redis); ``auth``: bearer tokens and the
  authorization server.

The other names here (``lowlevel``, ``mcpserver``, ``streamable_http``, ``session``, ``context``,
``stdio``, ...) are the official SDK's import paths and the documented ones: each only re-exports.
"""

from minimcp.server.core.caching import CacheHint
from minimcp.server.core.context import ServerRequestContext
from minimcp.server.core.server import InitializationOptions, NotificationOptions, Server
from minimcp.server.app.server import MCPServer

__all__ = ["CacheHint", "InitializationOptions", "MCPServer", "NotificationOptions", "Server", "ServerRequestContext"]
