"""Server-to-client requests of one connection that await the client's answers.

A worker that asks the client something (elicitation, sampling, roots) blocks on a ``Waiter`` until
the answer arrives, its timeout passes or the connection closes; ``PendingRequests`` routes each
answer to its waiter by id and caps how many may be outstanding, so one client that never answers
cannot pin every worker of the pool.

A client's answer is taken only for a question of its connection that still awaits one, once; an
answer to nothing (an id never asked, one already answered) is refused, so nothing a client sends
unasked is kept anywhere. An answer to a question that timed out is taken and dropped: the client
was asked, only too late for the worker. An answer's id is at most ``MAX_ANSWER_ID_LENGTH``
characters (the server asks with integers), and an answer holds at most ``MAX_ANSWER_BYTES``.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections import deque
from typing import Any, Callable

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.workers import Lock, Waiter
from minimcp.shared import otel
from minimcp.shared.exceptions import UNKNOWN_QUESTION
from minimcp.types import INTERNAL_ERROR, INVALID_REQUEST, REQUEST_TIMEOUT, RequestId

__all__ = ["MAX_ANSWER_BYTES", "PendingRequests", "UnexpectedAnswer", "send_request", "take_answer"]

#: The largest answer (its JSON text) a question takes: an elicitation's form or a sampled message
#: fits many times over; a larger one fails its question with an error naming this limit.
MAX_ANSWER_BYTES = 1024 * 1024
#: The longest id an answer may carry, as JSON text (the server asks with integers).
MAX_ANSWER_ID_LENGTH = 64
#: How many questions that timed out a connection remembers, so that their late answers are taken
#: (and dropped) rather than refused as answers to nothing.
REMEMBERED_LATE = 64


class UnexpectedAnswer(MCPError):
    """A client's answer that no question awaits, or one no question could take (a malformed id, a
    body over ``MAX_ANSWER_BYTES``); the HTTP edge refuses it with 400."""

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_REQUEST, message)


def take_answer(message: Message, take: Callable[[Message], bool]) -> None:
    """Hand a client's answer to ``take``, which routes it to its question and says whether one
    awaited it; ``UnexpectedAnswer`` when none did.

    An id longer than any the server asks with is refused before anything looks it up (its type
    ``jsonrpc.parse`` checked). An answer over ``MAX_ANSWER_BYTES`` reaches its question as an error
    naming the limit (the worker learns now, rather than at its timeout), and is refused all the same.
    """
    request_id = message.get("id")
    wire_id = json.dumps(request_id)
    if len(wire_id) > MAX_ANSWER_ID_LENGTH:
        raise UnexpectedAnswer(f"An answer's id is the id of the server's question, at most {MAX_ANSWER_ID_LENGTH} "
                               "characters as JSON (the server asks with integers)")
    size = len(json.dumps(message, separators=(",", ":")))
    too_large = None
    if size > MAX_ANSWER_BYTES:
        too_large = UnexpectedAnswer(f"The answer to question {wire_id} is {size} bytes, over the "
                                     f"{MAX_ANSWER_BYTES} bytes an answer may hold; the question fails with this error")
        message = jsonrpc.error_from(request_id, too_large)
    if not take(message):
        raise UnexpectedAnswer(f"{UNKNOWN_QUESTION} with id {wire_id} "
                               "(it was never asked, or is answered already)")
    if too_large is not None:
        raise too_large


class PendingRequests:
    """Server-to-client requests of one connection that still await their answers, keyed by id.

    ``limit`` (``None``: no limit) caps how many may be outstanding at once, so one client that
    never answers cannot pin every worker of the pool; the request over the cap fails at once.
    The last ``REMEMBERED_LATE`` questions that ended unanswered are remembered, their late answers
    taken and dropped.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        #: Where the next request id comes from: a count of this connection's own, or, for a session
        #: that several processes serve, the shared backend's (ids unique across processes, each
        #: registered there as awaiting its answer, which any process may then take once).
        self.new_id: Callable[[], RequestId] = functools.partial(next, itertools.count(1))
        #: Told of each question that ended unanswered (timed out, or its worker gave up): a shared
        #: backend then takes the question's late answer and drops it, as ``answer`` does here.
        self.ended: Callable[[RequestId], None] = _nothing
        # _lock guards _waiting, _late and _closed_with.
        self._lock = Lock()
        self._waiting: dict[RequestId, Waiter] = {}
        self._late: deque[RequestId] = deque(maxlen=REMEMBERED_LATE)
        self._closed_with: MCPError | None = None

    def open(self) -> tuple[RequestId, Waiter]:
        waiter = Waiter()
        request_id = self.new_id()  # outside the lock: a shared backend's id is a round trip
        with self._lock:
            refusal = self._closed_with
            if refusal is None and self.limit is not None and len(self._waiting) >= self.limit:
                refusal = MCPError(INTERNAL_ERROR, f"Too many requests awaiting this client's answers (limit {self.limit})")
            if refusal is None:
                self._waiting[request_id] = waiter
                return request_id, waiter
        self.ended(request_id)  # never asked: a shared backend forgets it awaited an answer
        raise refusal

    def answer(self, message: Message) -> bool:
        """Route a client's response to its waiter; whether a question of this connection took it
        (a late answer to one that timed out is taken, and dropped)."""
        request_id = message.get("id")
        with self._lock:
            waiter = self._waiting.pop(request_id, None)  # type: ignore[arg-type]
            if waiter is None:
                late = request_id in self._late
                if late:
                    self._late.remove(request_id)  # type: ignore[arg-type]
                return late
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
        """The question ``request_id`` ended: answered, or no longer awaited (remembered as late)."""
        with self._lock:
            unanswered = self._waiting.pop(request_id, None) is not None
            if unanswered:
                self._late.append(request_id)
        if unanswered:
            self.ended(request_id)

    def close(self, error: MCPError) -> None:
        """Fail every wait, now and later: the connection is gone."""
        with self._lock:
            self._closed_with = error
            waiters, self._waiting = list(self._waiting.values()), {}
        for waiter in waiters:
            waiter.fail(error)

    def withdraw(self, error: MCPError) -> None:
        """Fail every wait with ``error``, and every later question: this process stops serving.
        Each question ends as a timed-out one does, so its late answer is taken and dropped."""
        with self._lock:
            self._closed_with = error
            waiting, self._waiting = self._waiting, {}
            self._late.extend(waiting)
        for waiter in waiting.values():
            waiter.fail(error)
        for request_id in waiting:
            self.ended(request_id)

    def __len__(self) -> int:
        return len(self._waiting)


def _nothing(request_id: RequestId) -> None:
    """A connection of one process: nobody else to tell that a question ended."""


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

