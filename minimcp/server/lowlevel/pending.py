"""Server-to-client requests of one connection that await the client's answers.

A worker that asks the client something (elicitation, sampling, roots) blocks on a ``Waiter`` until
the answer arrives, its timeout passes or the connection closes; ``PendingRequests`` routes each
answer to its waiter by id and caps how many may be outstanding, so one client that never answers
cannot pin every worker of the pool.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.lowlevel.outbox import Outbox
from minimcp.server.lowlevel.workers import Lock, Waiter
from minimcp.shared import otel
from minimcp.types import INTERNAL_ERROR, REQUEST_TIMEOUT, RequestId


class PendingRequests:
    """Server-to-client requests of one connection that still await their answers, keyed by id.

    ``limit`` (``None``: no limit) caps how many may be outstanding at once, so one client that
    never answers cannot pin every worker of the pool; the request over the cap fails at once.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        #: Where the next request id comes from: a count of this connection's own, or, for a session
        #: that several processes serve, the shared backend's (ids unique across processes).
        self.new_id: Callable[[], RequestId] = functools.partial(next, itertools.count(1))
        # _lock guards _waiting and _closed_with.
        self._lock = Lock()
        self._waiting: dict[RequestId, Waiter] = {}
        self._closed_with: MCPError | None = None

    def open(self) -> tuple[RequestId, Waiter]:
        waiter = Waiter()
        request_id = self.new_id()  # outside the lock: a shared backend's id is a round trip
        with self._lock:
            if self._closed_with is not None:
                raise self._closed_with
            if self.limit is not None and len(self._waiting) >= self.limit:
                raise MCPError(INTERNAL_ERROR, f"Too many requests awaiting this client's answers (limit {self.limit})")
            self._waiting[request_id] = waiter
        return request_id, waiter

    def answer(self, message: Message) -> bool:
        """Route a client's response to its waiter; unknown or late ids are ignored."""
        with self._lock:
            waiter = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
        if waiter is None:
            return False
        if "error" in message:
            error = message["error"]
            code = error.get("code")
            if isinstance(code, bool) or not isinstance(code, int):
                code = INTERNAL_ERROR  # a malformed error answer must not travel on as garbage
            waiter.fail(MCPError(code, str(error.get("message", "")), error.get("data")))
        else:
            waiter.resolve(message)
        return True

    def ids(self) -> list[RequestId]:
        """The ids of the requests still awaiting answers."""
        with self._lock:
            return list(self._waiting)

    def drop(self, request_id: RequestId) -> None:
        with self._lock:
            self._waiting.pop(request_id, None)

    def close(self, error: MCPError) -> None:
        """Fail every wait, now and later: the connection is gone."""
        with self._lock:
            self._closed_with = error
            waiters, self._waiting = list(self._waiting.values()), {}
        for waiter in waiters:
            waiter.fail(error)

    def __len__(self) -> int:
        return len(self._waiting)


def send_request(
    pending: PendingRequests, outbox: Outbox, method: str, params: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """Ask the client something on ``outbox`` and block the calling worker until it answers.

    Returns the JSON-RPC ``result``; raises ``MCPError`` for an error answer, a timeout
    (-32001, after which a ``notifications/cancelled`` tells the client to stop) or a closed
    connection (-32000).
    """
    if not outbox.can_request:
        raise jsonrpc.NoBackChannelError(method)
    request_id, waiter = pending.open()
    outbox.track(waiter)
    with otel.sending(method, params, request_id) as outgoing:
        try:
            outbox.send(jsonrpc.request(request_id, method, outgoing.params))
            response = waiter.wait(timeout)
        finally:
            outbox.untrack(waiter)
            pending.drop(request_id)
        if response is None:
            outbox.send(jsonrpc.notification("notifications/cancelled", {"requestId": request_id, "reason": "timed out"}))
            raise MCPError(REQUEST_TIMEOUT, f"Request '{method}' timed out")
        outgoing.answered(response)
    result = response.get("result")
    if not isinstance(result, dict):
        raise MCPError(INTERNAL_ERROR, f"The client answered '{method}' with a result that is not an object")
    return result


__all__ = ["PendingRequests", "send_request"]
