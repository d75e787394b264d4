"""The stdio transport: newline-delimited JSON-RPC on stdin/stdout.

The public path; the code lives in ``minimcp.server.edges.stdio``."""

from minimcp.server.edges.stdio import (
    EOF_GRACE,
    serve_stdio,
    stdio_server,
)

__all__ = ["EOF_GRACE", "serve_stdio", "stdio_server"]
