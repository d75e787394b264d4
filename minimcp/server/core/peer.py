"""``Peer``: the server's side of one client on an ordered stream (a stdio pipe, an in-memory link).

The one home of what such a transport would otherwise decide for itself, so that stdio and the
in-memory transport only frame bytes and deliver what the outboxes hand them:

- which connection a request belongs to: the legacy session of this stream (open from the start,
  filled in by ``initialize``), or a fresh one for each 2026-07-28 request;
- adopting the session once ``initialize`` succeeded (the rule is ``Dispatcher.opens_session``,
  which Streamable HTTP follows too): from then on notifications reach it and broadcasts reach the
  standalone channel;
- cancelling: every call of the stream, in either era, is tracked in the legacy session's table of
  calls in flight, so ``notifications/cancelled`` finds it by id (no table of the transport's own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from minimcp.jsonrpc import Message
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.sessions import Connection
from minimcp.shared.transport_context import TransportContext

if TYPE_CHECKING:
    from minimcp.server.core.dispatch import ServedServer


class Peer:
    """One client of an ordered stream; ``kind`` names the transport in ``TransportContext.kind``.

    ``raise_exceptions`` shows the client the real text of internal failures (for debugging), as the
    official SDK's flag does. Requests arrive from one reader thread; notifications and answers may
    come from any thread (an in-memory client's other threads).
    """

    def __init__(self, server: ServedServer, kind: str, raise_exceptions: bool = False,
                 connection: Connection | None = None) -> None:
        self._dispatcher = server.dispatcher
        self._transports = {can: TransportContext(kind=kind, can_send_request=can) for can in (False, True)}
        #: The legacy session of this stream (``connection``: one built by hand, ``Connection.for_loop``);
        #: also the table of its calls in flight, in both eras.
        self.connection = connection or self._dispatcher.new_legacy_connection()
        self.connection.expose_errors = raise_exceptions
        self.adopted = False
        self._standalone: Outbox | None = None

    def request(self, message: Message, outbox_for: Callable[[bool], Outbox]) -> tuple[Outbox, Message | None]:
        """Dispatch a request on the outbox ``outbox_for(can_request)`` gives; the answer when it is
        ready now, ``None`` when a worker closes the outbox with it later. Raises ``MCPError`` for a
        2026-07-28 request whose envelope is refused."""
        connection = self.connection_for(message)
        outbox = outbox_for(connection.can_send_request)
        answer = self._dispatcher.handle_request(message, connection, outbox, self._transports[outbox.can_request],
                                                 calls=self.connection)
        if self._dispatcher.opens_session(message, answer):
            self._adopt()
        return outbox, answer

    def connection_for(self, message: Message) -> Connection:
        """The connection ``message`` is served on, as its era decides (``Era.on_stream``)."""
        dispatcher = self._dispatcher
        return dispatcher.era_of(message).on_stream(dispatcher.server, self.connection, message)

    def notification(self, message: Message) -> None:
        self._dispatcher.handle_notification(message, self.connection if self.adopted else None, calls=self.connection)

    def response(self, message: Message) -> None:
        self._dispatcher.handle_response(message, self.connection)

    def abandon(self, request_id: Any) -> None:
        """The client stopped waiting for ``request_id``: end that call as if its client left."""
        outbox = self.connection.channel(request_id)
        if outbox is not None:
            outbox.abort()

    def listen(self, outbox: Outbox) -> None:
        """Make ``outbox`` the standalone channel (messages not tied to a request), once adopted."""
        self._standalone = outbox
        if self.adopted:
            self.connection.attach_standalone(outbox)

    def _adopt(self) -> None:
        self.adopted = True
        if self._standalone is not None:
            self.connection.attach_standalone(self._standalone)

    def close(self) -> None:
        """The stream ended: every call still waiting on this client wakes with "Connection closed"."""
        self.connection.close()
