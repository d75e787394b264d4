"""Threads and waits: the worker pool, per-request outboxes, and pending server-to-client requests.

Rules this file owns:
- every tool call (and every other handler that runs user code that may block) runs on a worker
  from one bounded pool; a request that cannot get a worker within ``wait_timeout`` is refused;
- every wait is bounded: a worker blocked on the client gives up after its timeout;
- an outbox is the one channel a request's outgoing messages travel on; when the client goes away
  the transport aborts the outbox, which wakes every wait of that request with "Connection closed".

Nothing here knows about HTTP, WSGI or stdio: transports implement ``Outbox._deliver``.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.types import INTERNAL_ERROR, REQUEST_TIMEOUT, RequestId


class WorkerPool:
    """A bounded set of worker threads shared by every transport of one server."""

    def __init__(self, max_workers: int, wait_timeout: float) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.wait_timeout = wait_timeout
        self._slots = threading.BoundedSemaphore(max_workers)
        # _lock guards _executor and _pid: the executor is created on first use in each process,
        # because threads do not survive a fork (gunicorn preloads the app, then forks workers).
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = 0

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on a worker, or raise the "Server busy" error if none frees up in time."""
        if not self._slots.acquire(timeout=self.wait_timeout):
            raise MCPError(
                INTERNAL_ERROR, f"Server busy: no worker thread became free within {self.wait_timeout}s"
            )
        try:
            self._get_executor().submit(self._run, fn)
        except BaseException:
            self._slots.release()
            raise

    def _run(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        finally:
            self._slots.release()

    def _get_executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(self.max_workers, thread_name_prefix="minimcp-worker")
                self._pid = os.getpid()
            return self._executor

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


class Waiter:
    """One outstanding server-to-client request: the worker waits, a later message resolves it."""

    __slots__ = ("_event", "_response", "_error")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._response: Message | None = None
        self._error: MCPError | None = None

    def resolve(self, response: Message) -> None:
        if not self._event.is_set():
            self._response = response
            self._event.set()

    def fail(self, error: MCPError) -> None:
        if not self._event.is_set():
            self._error = error
            self._event.set()

    def wait(self, timeout: float) -> Message | None:
        """The client's JSON-RPC response, ``None`` on timeout; raises the failure that ended the wait."""
        if not self._event.wait(timeout):
            return None
        if self._error is not None:
            raise self._error
        return self._response


class PendingRequests:
    """Server-to-client requests of one connection that still await their answers, keyed by id."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        # _lock guards _waiting and _closed_with.
        self._lock = threading.Lock()
        self._waiting: dict[RequestId, Waiter] = {}
        self._closed_with: MCPError | None = None

    def open(self) -> tuple[RequestId, Waiter]:
        waiter = Waiter()
        with self._lock:
            if self._closed_with is not None:
                raise self._closed_with
            request_id = next(self._ids)
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
            waiter.fail(MCPError(error.get("code", 0), str(error.get("message", "")), error.get("data")))
        else:
            waiter.resolve(message)
        return True

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


class Outbox(ABC):
    """The channel one request's outgoing messages travel on, in order, ending with its response.

    ``can_request`` says whether server-to-client requests may travel here (a JSON-only response, a
    2026-07-28 request or a single-threaded WSGI server cannot carry them).
    """

    def __init__(self, can_request: bool = True) -> None:
        self.can_request = can_request
        self.cancelled = threading.Event()
        # _lock guards _done and _waiters.
        self._lock = threading.Lock()
        self._done = False
        self._waiters: set[Waiter] = set()

    @property
    def done(self) -> bool:
        return self._done

    def send(self, message: Message) -> None:
        """Queue a notification or server-to-client request; dropped once the request has ended."""
        if not self._done and not self.cancelled.is_set():
            self._deliver(message, False)

    def close(self, response: Message) -> None:
        """Deliver the final response; only the first call counts."""
        with self._lock:
            if self._done:
                return
            self._done = True
        self._deliver(response, True)

    def abort(self) -> None:
        """The client went away: mark the request cancelled and end every wait it has."""
        self.cancelled.set()
        with self._lock:
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.fail(jsonrpc.connection_closed())

    def track(self, waiter: Waiter) -> None:
        with self._lock:
            self._waiters.add(waiter)
        if self.cancelled.is_set():
            waiter.fail(jsonrpc.connection_closed())

    def untrack(self, waiter: Waiter) -> None:
        with self._lock:
            self._waiters.discard(waiter)

    @abstractmethod
    def _deliver(self, message: Message, final: bool) -> None:
        """Hand one message to the transport; ``final`` marks the response that ends the request."""


class QueueOutbox(Outbox):
    """An outbox the transport drains from its own thread (an HTTP response body, an in-memory call)."""

    def __init__(self, can_request: bool = True) -> None:
        super().__init__(can_request)
        # _cond guards _queue.
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[tuple[Message, bool]] = deque()

    def _deliver(self, message: Message, final: bool) -> None:
        with self._cond:
            self._queue.append((message, final))
            self._cond.notify()

    def get(self, timeout: float) -> tuple[Message, bool] | None:
        """The next message and whether it is the final response; ``None`` after ``timeout`` seconds."""
        with self._cond:
            if not self._queue and not self._cond.wait_for(lambda: self._queue, timeout):
                return None
            return self._queue.popleft()


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
    try:
        outbox.send(jsonrpc.request(request_id, method, params))
        response = waiter.wait(timeout)
    finally:
        outbox.untrack(waiter)
        pending.drop(request_id)
    if response is None:
        outbox.send(jsonrpc.notification("notifications/cancelled", {"requestId": request_id, "reason": "timed out"}))
        raise MCPError(REQUEST_TIMEOUT, f"Request '{method}' timed out")
    result = response.get("result")
    if not isinstance(result, dict):
        raise MCPError(INTERNAL_ERROR, f"The client answered '{method}' with a result that is not an object")
    return result
