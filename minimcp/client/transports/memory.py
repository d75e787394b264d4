"""A server object in this process, reached through its in-memory endpoint (no sockets)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minimcp import jsonrpc
from minimcp.client.transports.base import Handler, Headers, StreamPairContext
from minimcp.jsonrpc import Message

if TYPE_CHECKING:
    from minimcp.server.edges.memory import InMemoryEndpoint


class InMemoryTransport(StreamPairContext):
    """A server object in this process, through its :meth:`in_memory_endpoint` (no sockets)."""

    #: Read by the client era's ``direct_progress``: the official in-process path's rules apply.
    in_process = True
    #: A request given up on (abandoned, timed out) is aborted in the server (base.Transport).
    closes_abandoned = True

    def __init__(self, server: Any, raise_exceptions: bool = False) -> None:
        self._server = server
        self._raise_exceptions = raise_exceptions
        self._endpoint: InMemoryEndpoint | None = None
        self._handler: Handler | None = None

    def connect(self, handler: Handler) -> None:
        self._handler = handler
        self._endpoint = self._server.in_memory_endpoint(raise_exceptions=self._raise_exceptions)

    def _live(self) -> InMemoryEndpoint:
        if self._endpoint is None:
            raise jsonrpc.connection_closed()
        return self._endpoint

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        assert self._handler is not None
        answer = self._live().exchange(message, self._handler, timeout)
        if answer is None:
            raise jsonrpc.connection_closed()
        return answer

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        assert self._handler is not None
        self._live().exchange(message, self._handler)

    def listen(self, *, headers: Headers | None = None) -> None:
        assert self._handler is not None
        self._live().listen(self._handler)

    def abandon(self, request_id: Any) -> bool:
        if self._endpoint is not None:
            self._endpoint.abandon(request_id)
        return True

    def close(self) -> None:
        endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            endpoint.close()
