"""The in-memory transport: one connection to a server object, no sockets, the same protocol.

Messages still go through JSON encoding and the dispatcher exactly as on a real connection, so a
test written against ``Client(mcp)`` exercises what a remote client would. Each connection enters
the server's lifespan for itself and leaves it when the client closes, as the official in-memory
client does (a ported program prints its "disconnected" line when its ``with Client(...)`` ends).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.outbox import Outbox, QueueOutbox
from minimcp.server.core.peer import Peer

if TYPE_CHECKING:
    from minimcp.server.core.dispatch import ServedServer

OnMessage = Callable[[Message], None]


class _CallbackOutbox(Outbox):
    """The standalone channel: messages go straight to the client's handler, on the sending thread."""

    def __init__(self, on_message: OnMessage) -> None:
        super().__init__(can_request=True)
        self._on_message = on_message

    def _deliver(self, message: Message, final: bool) -> None:
        self._on_message(message)


class InMemoryEndpoint:
    """The server side of one in-memory connection (like one stdio process)."""

    def __init__(self, server: ServedServer, raise_exceptions: bool = False) -> None:
        self._peer = Peer(server, "memory", raise_exceptions)
        self._lifespan = contextlib.ExitStack()
        self._peer.connection.serving(server, self._lifespan.enter_context(server.new_lifespan()))

    def exchange(self, message: Message, on_message: OnMessage, timeout: float | None = None) -> Message | None:
        """Deliver one client message; for a request, return its response after passing every interim
        server message to ``on_message`` on this thread. ``timeout`` bounds the wait for the response."""
        message, kind = jsonrpc.parse(jsonrpc.encode(message))
        if kind == "notification":
            self._peer.notification(message)
            return None
        if kind != "request":
            self._peer.response(message)
            return None
        try:
            outbox, answer = self._peer.request(message, QueueOutbox)
        except MCPError as refused:
            return jsonrpc.error_from(message["id"], refused)
        if answer is None:
            assert isinstance(outbox, QueueOutbox)
            answer = outbox.drain(on_message, message["method"], timeout)
        return answer

    def abandon(self, request_id: Any) -> None:
        """The client stopped waiting for ``request_id``: end that request as if its client left."""
        self._peer.abandon(request_id)

    def listen(self, on_message: OnMessage) -> None:
        """Receive messages not tied to a request (legacy standalone channel) on server threads."""
        self._peer.listen(_CallbackOutbox(on_message))

    def close(self) -> None:
        """Wake the calls still waiting on this client, then leave this connection's lifespan."""
        try:
            self._peer.close()
        finally:
            self._lifespan.close()
