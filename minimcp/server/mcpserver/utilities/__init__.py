"""Helpers for tool authors, at the official import path ``mcp.server.mcpserver.utilities``."""
