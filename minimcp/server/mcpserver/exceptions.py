"""Server exceptions under the official import path."""

from minimcp.server.exceptions import InvalidSignature, ResourceError, ResourceNotFoundError, ToolError

__all__ = ["InvalidSignature", "ResourceError", "ResourceNotFoundError", "ToolError"]
