"""The MCP client: ``Client`` for everyday use, ``ClientSession`` and transports underneath.

    from minimcp import Client

    with Client("http://127.0.0.1:8000/mcp") as client:
        print(client.call_tool("add", {"a": 1, "b": 2}).content)

``Client(mcp)`` talks to a server object in this process, ``Client("http://...")`` over Streamable
HTTP, ``Client(StdioServerParameters(command=...))`` to a subprocess; anything else is used as a
:class:`Transport`.
"""

from minimcp.client.caching import (
    CacheConfig,
    CacheEntry,
    CacheKey,
    CacheMode,
    InMemoryResponseCacheStore,
    ResponseCacheStore,
)
from minimcp.client.cancel import CallCancelled, CancelScope
from minimcp.client.client import Client, InputRequiredRoundsExceededError
from minimcp.client.extension import (
    ClaimContext,
    ClientExtension,
    NotificationBinding,
    ResultClaim,
    UnexpectedClaimedResult,
    advertise,
)
from minimcp.client.session import ClientRequestContext, ClientSession, IncomingMessage
from minimcp.client.tasks import TaskCancelledError, TaskHandle
from minimcp.client.terminal import TerminalElicitation, terminal_elicitation
from minimcp.client.transports import Transport

__all__ = [
    "CacheConfig",
    "CacheEntry",
    "CacheKey",
    "CacheMode",
    "CallCancelled",
    "CancelScope",
    "ClaimContext",
    "Client",
    "ClientExtension",
    "ClientRequestContext",
    "ClientSession",
    "InMemoryResponseCacheStore",
    "IncomingMessage",
    "InputRequiredRoundsExceededError",
    "NotificationBinding",
    "ResponseCacheStore",
    "ResultClaim",
    "TaskCancelledError",
    "TaskHandle",
    "TerminalElicitation",
    "Transport",
    "UnexpectedClaimedResult",
    "advertise",
    "terminal_elicitation",
]
