"""``MCPServer``: the registries, the decorators, and the low-level ``Server`` that serves them.

The public path; the code lives in ``minimcp.server.app.server``."""

from minimcp.server.app.server import (
    MCPServer,
    Settings,
    require_client_extension,
)

__all__ = ["MCPServer", "Settings", "require_client_extension"]
