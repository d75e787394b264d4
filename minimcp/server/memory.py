"""The in-memory transport: one connection to a server object, no sockets, the same protocol.

Messages still go through JSON encoding and the dispatcher exactly as on a real connection, so a
test written against ``Client(mcp)`` exercises what a remote client would.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.lowlevel.calls import Outbox, QueueOutbox
from minimcp.server.lowlevel.dispatch import MODERN
from minimcp.server.lowlevel.sessions import Connection
from minimcp.shared.transport_context import TransportContext
from minimcp.types import REQUEST_TIMEOUT

if TYPE_CHECKING:
    from minimcp.server.lowlevel.server import Server

OnMessage = Callable[[Message], None]

#: The transport context of a message, by whether its session is legacy (which can ask back).
_TRANSPORTS = {legacy: TransportContext(kind="memory", can_send_request=legacy) for legacy in (False, True)}


class _CallbackOutbox(Outbox):
    """The standalone channel: messages go straight to the client's handler, on the sending thread."""

    def __init__(self, on_message: OnMessage) -> None:
        super().__init__(can_request=True)
        self._on_message = on_message

    def _deliver(self, message: Message, final: bool) -> None:
        self._on_message(message)


class InMemoryEndpoint:
    """The server side of one in-memory connection (like one stdio process)."""

    def __init__(self, server: Server[Any], raise_exceptions: bool = False) -> None:
        self._server = server
        self._raise_exceptions = raise_exceptions
        self._dispatcher = server.dispatcher
        self._session: Connection | None = None
        self._listener: _CallbackOutbox | None = None
        # _lock guards _inflight: request id -> the outbox its caller drains, for abandon().
        self._lock = threading.Lock()
        self._inflight: dict[Any, QueueOutbox] = {}
        server.lifespan_context()

    def exchange(self, message: Message, on_message: OnMessage, timeout: float | None = None) -> Message | None:
        """Deliver one client message; for a request, return its response after passing every interim
        server message to ``on_message`` on this thread. ``timeout`` bounds the wait for the response."""
        message = jsonrpc.decode(jsonrpc.encode(message))
        kind = jsonrpc.kind_of(message)
        if kind != "request":
            session = self._session
            if session is not None and kind == "notification":
                self._dispatcher.handle_notification(message, session)
            elif session is not None:
                self._dispatcher.handle_response(message, session)
            return None
        try:
            session = self._session_for(message)
        except MCPError as refused:
            return jsonrpc.error_from(message["id"], refused)
        outbox = QueueOutbox(can_request=session.can_send_request)
        request_id = message["id"]
        with self._lock:
            self._inflight[request_id] = outbox
        try:
            answer = self._dispatcher.handle_request(message, session, outbox, _TRANSPORTS[session.can_send_request])
            if answer is None:
                answer = self._drain(outbox, on_message, message["method"], timeout)
        finally:
            with self._lock:
                self._inflight.pop(request_id, None)
        if message["method"] == "initialize" and "result" in answer:
            self._session = session
            if self._listener is not None:
                session.attach_standalone(self._listener)
        return answer

    def _session_for(self, message: Message) -> Connection:
        if self._dispatcher.era_of(message) == MODERN:
            session = self._dispatcher.modern_session(message)
        elif message["method"] == "initialize" or self._session is None:
            session = self._dispatcher.new_legacy_session()
        else:
            return self._session
        session.expose_errors = self._raise_exceptions
        return session

    @staticmethod
    def _drain(outbox: QueueOutbox, on_message: OnMessage, method: str, timeout: float | None) -> Message:
        waited = 0.0
        while True:
            item = outbox.get(1.0)
            if outbox.cancelled.is_set():
                raise jsonrpc.connection_closed()
            if item is None:
                waited += 1.0
                if timeout is not None and waited >= timeout:
                    outbox.abort()
                    raise MCPError(REQUEST_TIMEOUT, f"Request '{method}' timed out")
                continue
            message, final = item
            if final:
                return message
            on_message(message)

    def abandon(self, request_id: Any) -> None:
        """The client stopped waiting for ``request_id``: end that request as if its client left."""
        with self._lock:
            outbox = self._inflight.get(request_id)
        if outbox is not None:
            outbox.abort()

    def listen(self, on_message: OnMessage) -> None:
        """Receive messages not tied to a request (legacy standalone channel) on server threads."""
        self._listener = _CallbackOutbox(on_message)
        if self._session is not None:
            self._session.attach_standalone(self._listener)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
