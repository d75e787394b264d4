"""The server side, by layer.

- ``core``: the sans-I/O protocol core (dispatch, era rules, sessions, rounds, subscriptions,
  waits), the low-level ``Server`` (one handler per method), and the ports it declares for what
  outlives a request (``core.ports``), with their in-process implementations.
- ``backends``: the stores a deployment of several processes shares (``RedisBackend``).
- ``app``: ``MCPServer``, the decorator tier, which registers its registries as the handlers of a
  low-level ``Server``; the tasks extension, OpenAPI tools, MCP Apps.
- ``edges``: the transports that turn bytes into messages and back (``stdio``, the Streamable HTTP
  exchange without I/O with its ``wsgi`` adapter, ``memory``) and the ``runner`` that picks one.
- ``auth``: bearer tokens and the built-in authorization server.

A server's own options are small frozen objects, each declared once: ``Limits`` (workers and
each caller's share), ``TaskOptions`` (where tasks are kept, how many run), ``HTTPOptions`` (what
the HTTP endpoint serves and holds) and ``AuthOptions`` (how it is protected). Each field is also
a keyword of the constructor that takes the object (``MCPServer(max_workers=8)``).

The other modules here are the import paths the official SDK (and earlier minimcp) used; each
re-exports from the layer that holds the code. The names below are imported on first use, so
that ``import minimcp.server.core`` (which runs this file first) loads no tier and no transport.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AuthOptions": "minimcp.server.auth.options",
    "HTTPOptions": "minimcp.server.edges.http.options",
    "Limits": "minimcp.server.core.options",
    "TaskOptions": "minimcp.server.app.tasks.options",
    "CacheHint": "minimcp.server.core.caching",
    "ServerRequestContext": "minimcp.server.core.context",
    "InitializationOptions": "minimcp.server.core.initialization",
    "NotificationOptions": "minimcp.server.core.initialization",
    "Server": "minimcp.server.core.server",
    "MCPServer": "minimcp.server.app.server",
    "create_proxy": "minimcp.server.app.proxy",
}

__all__ = ["AuthOptions", "CacheHint", "HTTPOptions", "InitializationOptions", "Limits", "MCPServer",
           "NotificationOptions", "Server", "ServerRequestContext", "TaskOptions", "create_proxy"]

if TYPE_CHECKING:
    from minimcp.server.app.tasks.options import TaskOptions
    from minimcp.server.auth.options import AuthOptions
    from minimcp.server.core.options import Limits
    from minimcp.server.edges.http.options import HTTPOptions
    from minimcp.server.app.server import MCPServer
    from minimcp.server.app.proxy import create_proxy
    from minimcp.server.core.caching import CacheHint
    from minimcp.server.core.context import ServerRequestContext
    from minimcp.server.core.initialization import InitializationOptions, NotificationOptions
    from minimcp.server.core.server import Server


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'minimcp.server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
