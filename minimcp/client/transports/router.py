"""Where a transport with one inbound stream (stdio's pipe, the old HTTP+SSE stream) sends what it reads.

Such a transport has one reader thread and many waiting callers. Each message the reader takes
off the stream is an answer (it wakes the caller blocked on that id), a server-to-client request
(answered on a thread of its own, a bounded number at once, so that a slow callback never stalls
the stream), or a notification (handled on the reader thread, in order). When the stream ends,
every waiting caller wakes with "Connection closed".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from minimcp import jsonrpc
from minimcp.client.transports.base import Handler, timed_out
from minimcp.jsonrpc import MCPError, Message
from minimcp.types import INTERNAL_ERROR

logger = logging.getLogger("minimcp.client")

#: How many server-to-client requests are answered at once, each on a thread of its own; one more is
#: refused at once (-32603 "Client busy"), so a server that floods us cannot make us start threads without end.
MAX_SERVER_REQUESTS = 32


class _Slot:
    """Where the reader thread leaves the response one waiting request is blocked on."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.message: Message | None = None


class MessageRouter:
    """Answers to waiting callers, server requests to bounded threads, notifications to the handler.

    ``reply`` sends one message back to the server (the refusal of a request beyond the bound).
    """

    def __init__(self, name: str, reply: Callable[[Message], None]) -> None:
        self._name = name
        self._reply = reply
        self.handler: Handler | None = None
        # Guards _pending (request id -> slot) and _ended between callers and the reader thread.
        self._lock = threading.Lock()
        self._pending: dict[Any, _Slot] = {}
        self._ended = False
        # Counts the threads answering server-to-client requests: the reader takes a slot before it
        # starts one, the thread gives it back when its answer is sent.
        self._answering = threading.BoundedSemaphore(MAX_SERVER_REQUESTS)

    def exchange(self, message: Message, send: Callable[[Message], None], timeout: float | None) -> Message:
        """Send ``message`` and wait for its answer; without a timeout the wait still ends when the
        stream does."""
        slot = _Slot()
        with self._lock:
            if self._ended:
                raise jsonrpc.connection_closed()
            self._pending[message["id"]] = slot
        try:
            send(message)
            if not slot.done.wait(timeout):
                raise timed_out(message["method"])
        finally:
            with self._lock:
                self._pending.pop(message["id"], None)
        if slot.message is None:
            raise jsonrpc.connection_closed()
        return slot.message

    def abandon(self, request_id: Any) -> None:
        """The caller waiting on ``request_id`` raises "Connection closed" now."""
        with self._lock:
            slot = self._pending.pop(request_id, None)
        if slot is not None:
            slot.done.set()

    def route(self, message: Message) -> None:
        """One message read off the stream (on the reader thread)."""
        if "method" not in message:
            with self._lock:
                slot = self._pending.pop(message.get("id"), None)
            if slot is not None:
                slot.message = message
                slot.done.set()
        elif self.handler is None:
            return
        elif "id" in message:
            self._answer_in_turn(message)
        else:
            self.handler(message)

    def end(self) -> None:
        """The stream ended: wake every waiting caller, refuse every later request."""
        with self._lock:
            self._ended = True
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.done.set()

    def _answer_in_turn(self, request: Message) -> None:
        if not self._answering.acquire(blocking=False):
            self._refuse_busy(request)
            return
        try:
            threading.Thread(target=self._answer, args=(request,), name=f"{self._name}-request", daemon=True).start()
        except RuntimeError:  # the system refused a thread
            self._answering.release()
            self._refuse_busy(request)

    def _answer(self, request: Message) -> None:
        assert self.handler is not None
        try:
            self.handler(request)
        finally:
            self._answering.release()

    def _refuse_busy(self, request: Message) -> None:
        refusal = jsonrpc.error(request["id"], INTERNAL_ERROR, f"Client busy: already answering {MAX_SERVER_REQUESTS} "
                                                              f"requests from this server; send {request['method']} again later")
        try:
            self._reply(refusal)
        except MCPError as exc:  # the reader thread must go on reading whatever the writer's state
            logger.warning("Could not refuse the server's %s: %s", request["method"], exc)
