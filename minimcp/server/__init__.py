"""The server side: ``MCPServer`` and what it is built from."""

from minimcp.server.app import MCPServer

__all__ = ["MCPServer"]
