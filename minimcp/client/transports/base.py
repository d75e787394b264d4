"""The contract every client transport keeps, and the pieces they share.

A transport is given one *handler* at :meth:`Transport.connect`. Every message the server sends
that is not the answer to one of our requests (notifications and server-to-client requests) goes
to that handler. Where a message is tied to a request (the request's own SSE stream, the
in-memory exchange), the handler runs on the caller's thread before :meth:`Transport.request`
returns, which is what lets progress callbacks finish before ``call_tool`` does. Where nothing ties
it (stdio, the standalone GET stream), it runs on the transport's reader thread; server-to-client
requests on stdio get a thread of their own (a bounded number at once) so that a slow user cannot
stall the pipe.

A transport knows framing, its connection and its threads; never eras, capabilities or callbacks.
Headers arrive ready-made from the session, and a transport without headers ignores them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from minimcp.jsonrpc import MCPError, Message
from minimcp.types import CONNECTION_CLOSED, INVALID_REQUEST, REQUEST_TIMEOUT

Handler = Callable[[Message], None]
Headers = Mapping[str, str]


@runtime_checkable
class Transport(Protocol):
    """One connection to one server, as :class:`~minimcp.client.ClientSession` drives it."""

    def connect(self, handler: Handler) -> None:
        """Open the connection; server messages that answer none of our requests go to ``handler``."""

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        """Send one request and block until its response (a result or an error message) arrives.

        Raises ``MCPError`` -32001 after ``timeout`` seconds and -32000 when the connection dies.
        """

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        """Send a notification, or our answer to a server-to-client request."""

    def listen(self, *, headers: Headers | None = None) -> None:
        """Open the legacy standalone channel for messages not tied to a request, if there is one."""

    def abandon(self, request_id: Any) -> bool:
        """Stop waiting for ``request_id``'s response: its ``request`` raises -32000 ("Connection
        closed"); a no-op when it is not in flight. ``True`` only when that closed the request's own
        exchange (HTTP shuts the connection it travels on, answer's head awaited or not), which in
        2026-07-28 is its cancellation; otherwise, and always in legacy (where a disconnect is no
        cancellation), the caller sends ``notifications/cancelled``.

        A transport whose every request given up on (abandoned, or timed out) has such an
        exchange of its own says so with a class attribute ``closes_abandoned = True``."""

    def close(self) -> None:
        """End the connection and release its threads, sockets or process."""


class StreamPairContext:
    """``with transport as (read, write):``, the official SDK's transport shape.

    The official SDK yields two anyio streams; here one transport object carries both directions,
    so both ends are the transport itself and :class:`~minimcp.client.ClientSession` takes either.
    Leaving the block closes the connection.
    """

    def __enter__(self) -> tuple[Any, Any]:
        return self, self

    def __exit__(self, *exc_info: object) -> None:
        self.close()  # type: ignore[attr-defined]


class SessionExpired(MCPError):
    """The server no longer knows our legacy session (HTTP 404): the client must start over.

    ``restartable`` is false once starting over was tried and failed: every later request of that
    session raises this at once, without going to the server. ``message`` is the server's own, when
    it said why (a session another server process opened names the fix: a shared backend, or
    sticky sessions).
    """

    def __init__(self, *, restartable: bool = True, message: str | None = None) -> None:
        super().__init__(INVALID_REQUEST, message or "Session not found")
        self.restartable = restartable


class NetworkError(MCPError):
    """No answer came back at all: the connection was refused or dropped, or the network timed out
    (-32000 "Connection closed" or -32001). It says nothing of the protocol the server speaks, so
    ``mode="auto"`` raises it at once instead of trying the legacy handshake as well."""


def unreachable() -> NetworkError:
    return NetworkError(CONNECTION_CLOSED, "Connection closed")


def timed_out(method: str, error: type[MCPError] = MCPError) -> MCPError:
    return error(REQUEST_TIMEOUT, f"Request '{method}' timed out")
