"""Where a server meets its transports, at the official path ``mcp.server.runner``.

The public path; the code lives in ``minimcp.server.edges.runner``."""

from minimcp.server.edges.runner import (
    CallNext,
    in_memory_endpoint,
    run,
    serve_connection,
    serve_http,
    serve_one,
    ServerMiddleware,
    wsgi_app,
)

__all__ = ["CallNext", "in_memory_endpoint", "run", "serve_connection", "serve_http", "serve_one", "ServerMiddleware", "wsgi_app"]
