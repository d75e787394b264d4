"""Exceptions a server author raises or meets, under the official import path.

The split between an anticipated failure and a crash is what decides what the client reads: a
``ToolError``/``ResourceError`` you raise keeps its message, anything else is a crash whose text
(paths, queries, secrets) stays in the server log and the client reads only which tool or
resource failed, as in the official SDK.
"""

from __future__ import annotations


class MCPServerError(Exception):
    """Base class of the server-side errors below."""


class InvalidSignature(MCPServerError):
    """A handler's signature cannot work; raised at registration so the server fails at import."""


class ToolError(MCPServerError):
    """A tool failed on purpose; the client receives an ``is_error`` result carrying this message.

    ``MCPServer.call_tool`` raises it too (unknown tool, arguments that fail validation), so
    ``except ToolError`` around it catches every tool failure, crash or not.
    """


class UnexpectedToolError(ToolError):
    """A tool crashed: the client reads only ``Error executing tool <name>``; the exception itself is
    ``__cause__`` and goes to the server log with its traceback. Raised by the server, never by you."""


class ResourceError(MCPServerError):
    """A resource failed on purpose; the client receives -32603 with this message."""


class ResourceNotFoundError(ResourceError):
    """The resource does not exist: -32602 with this message and the URI in ``data``, in both eras."""


class UnexpectedResourceError(ResourceError):
    """Reading a resource crashed: the client reads ``Error reading resource <uri>``, the log the rest.
    Raised by the server, never by you."""
