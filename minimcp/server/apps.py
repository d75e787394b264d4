"""MCP Apps (``io.modelcontextprotocol/ui``): a tool that carries an interactive UI.

The public path; the code lives in ``minimcp.server.app.apps``."""

from minimcp.server.app.apps import (
    APP_MIME_TYPE,
    Apps,
    client_supports_apps,
    EXTENSION_ID,
    ResourceCsp,
    ResourcePermissions,
    Visibility,
)

__all__ = ["APP_MIME_TYPE", "Apps", "client_supports_apps", "EXTENSION_ID", "ResourceCsp", "ResourcePermissions", "Visibility"]
