"""Client transports, one per file (``http``, ``stdio``, ``memory``, ``http_sse`` for the deprecated
HTTP+SSE transport), keeping one contract (``base``).

Bytes and processes on one side, JSON-RPC message dicts on the other: framing (SSE in ``sse``,
newline-delimited JSON), HTTP status handling, the legacy ``Mcp-Session-Id``, SSE resumption,
subprocess lifetime, and the threads that read a pipe or a standalone stream live here; eras,
capabilities and callbacks do not (:class:`~minimcp.client.ClientSession` holds them). The public
factories are ``minimcp.client.stdio.stdio_client``,
``minimcp.client.streamable_http.streamable_http_client`` and ``minimcp.client.sse.sse_client``.

The ``http`` names are imported on first use: they bring ``requests``, which a client of a
subprocess or of a server in this process never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from minimcp.client.transports.base import (
    Handler,
    Headers,
    NetworkError,
    SessionExpired,
    StreamPairContext,
    Transport,
    timed_out,
)
from minimcp.client.transports.memory import InMemoryTransport
from minimcp.client.transports.sse import SSEEvent, SSEParser
from minimcp.client.transports.stdio import (
    DEFAULT_INHERITED_ENV_VARS,
    STDIO_EXIT_GRACE,
    StdioTransport,
    default_environment,
)

if TYPE_CHECKING:
    from minimcp.client.transports.http import (
        DEFAULT_MAX_SSE_EVENT_SIZE,
        DEFAULT_RETRY_MS,
        MAX_RESUME_ATTEMPTS,
        STANDALONE_OPEN_TIMEOUT,
        HttpTransport,
    )

_HTTP_NAMES = ("DEFAULT_MAX_SSE_EVENT_SIZE", "DEFAULT_RETRY_MS", "MAX_RESUME_ATTEMPTS", "STANDALONE_OPEN_TIMEOUT",
               "HttpTransport")

__all__ = [
    "DEFAULT_INHERITED_ENV_VARS",
    "DEFAULT_MAX_SSE_EVENT_SIZE",
    "DEFAULT_RETRY_MS",
    "MAX_RESUME_ATTEMPTS",
    "STANDALONE_OPEN_TIMEOUT",
    "STDIO_EXIT_GRACE",
    "Handler",
    "Headers",
    "HttpTransport",
    "InMemoryTransport",
    "NetworkError",
    "SSEEvent",
    "SSEParser",
    "SessionExpired",
    "StdioTransport",
    "StreamPairContext",
    "Transport",
    "default_environment",
    "timed_out",
]


def __getattr__(name: str) -> Any:
    if name not in _HTTP_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("minimcp.client.transports.http"), name)
    globals()[name] = value
    return value
