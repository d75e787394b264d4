"""``Image`` and ``Audio`` at the official import path ``mcp.server.mcpserver.utilities.types``."""

from minimcp.server.app.media import Audio, Image

__all__ = ["Audio", "Image"]
