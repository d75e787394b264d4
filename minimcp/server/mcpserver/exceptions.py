"""Exceptions a server author raises or meets, under the official import path."""

from __future__ import annotations


class MCPServerError(Exception):
    """Base class of the server-side errors below."""


class InvalidSignature(MCPServerError):
    """A handler's signature cannot work; raised at registration so the server fails at import."""


class ToolError(MCPServerError):
    """A tool failed; the client receives an ``is_error`` result carrying this message."""


class ResourceError(MCPServerError):
    """A resource could not be read."""


class ResourceNotFoundError(ResourceError):
    """The resource does not exist: -32602 with this message and the URI in ``data``."""
