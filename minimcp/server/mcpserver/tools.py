"""The registered-tool class under the official import path."""

from minimcp.server.tools import Tool

__all__ = ["Tool"]
