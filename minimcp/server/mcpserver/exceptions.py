"""Exceptions a server author raises or meets, under the official import path.

The public path; the code lives in ``minimcp.server.app.exceptions``."""

from minimcp.server.app.exceptions import (
    InvalidSignature,
    MCPServerError,
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)

__all__ = ["InvalidSignature", "MCPServerError", "ResourceError", "ResourceNotFoundError", "ToolError", "UnexpectedResourceError", "UnexpectedToolError"]
