"""What a client callback is handed, at the official import path ``mcp.client.context``."""

from minimcp.client.session import ClientRequestContext

__all__ = ["ClientRequestContext"]
