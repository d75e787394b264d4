"""Threads and waits: the worker pool, per-request outboxes, and pending server-to-client requests.

Rules this file owns:
- every tool call (and every other handler that runs user code that may block) runs as a job of
  one bounded pool, on one of its workers or (``run_here``) on the transport's thread when that
  thread would only wait; a request that cannot get a slot within ``wait_timeout`` is refused;
- every wait is bounded: a worker blocked on the client gives up after its timeout;
- an outbox is the one channel a request's outgoing messages travel on; when the client goes away
  the transport aborts the outbox, which wakes every wait of that request with "Connection closed".

Nothing here knows about HTTP, WSGI or stdio: transports implement ``Outbox._deliver``.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import logging
import os
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Optional

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.shared import otel
from minimcp.types import INTERNAL_ERROR, REQUEST_TIMEOUT, RequestId

logger = logging.getLogger("minimcp.server.calls")

#: One queued job of a ``WorkerPool``: the work, and what runs once its worker is counted free.
_Job = tuple[Callable[[], None], Optional[Callable[[], None]]]


class WorkerPool:
    """A bounded set of worker threads shared by every transport of one server.

    Threads start on demand, up to ``max_workers``, and one idle for ``idle_timeout`` seconds ends;
    a job waits for a free worker at most ``wait_timeout`` seconds. Jobs travel on a C-implemented
    ``SimpleQueue`` and every count lives under one lock, because a call's handoff to its worker is
    paid on every tool call: ``ThreadPoolExecutor`` plus a semaphore cost about four times as much.

    ``_lock`` (the lock of ``_free``) guards ``_running`` (jobs accepted and not finished),
    ``_idle`` (threads waiting for a job and not yet promised one), ``_queued_waiters``,
    ``_generation`` (advanced by ``close()``: a thread of an older generation ends after its job)
    and ``_pid``; jobs are put on the queue under it, so a thread that timed out can tell, under
    the same lock, whether a job is still meant for it.
    """

    def __init__(self, max_workers: int, wait_timeout: float, idle_timeout: float = 60.0,
                 thread_name: str = "minimcp-worker") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.wait_timeout = wait_timeout
        self.idle_timeout = idle_timeout
        self.thread_name = thread_name
        self._lock = threading.Lock()
        self._free = threading.Condition(self._lock)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._running = 0
        self._idle = 0
        self._queued_waiters = 0
        self._generation = 0
        self._pid = os.getpid()

    def submit(self, fn: Callable[[], None], then: Callable[[], None] | None = None) -> None:
        """Run ``fn`` on a worker, or raise the "Server busy" error if none frees up in time.

        ``fn`` runs in a copy of the caller's ``contextvars`` context, as an asyncio task would, so
        what the transport set for the request (its access token, say) is current in the call.
        ``then`` runs on the same thread after ``fn``, once the worker is counted free: a job that
        signals "done" from there (a connection handed back for its next request) cannot have the
        next ``submit`` find the pool still full of it.
        """
        job = (functools.partial(contextvars.copy_context().run, fn), then)
        with self._lock:
            self._admit()
            if self._idle:
                self._idle -= 1  # promised to this job
            else:  # may raise RuntimeError (the system refused a thread): then nothing was counted
                threading.Thread(target=self._work, args=(self._jobs, self._generation), name=self.thread_name,
                                 daemon=True).start()
            self._running += 1
            self._jobs.put(job)

    def run_here(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the calling thread as one of this pool's jobs, or raise "Server busy" as
        ``submit`` does: it counts against ``max_workers`` while it runs, in a copy of the caller's
        ``contextvars`` context. For a caller that would otherwise only wait for the job to end: it
        saves the two thread handoffs, which under load cost more than a short job itself."""
        with self._lock:
            self._admit()
            self._running += 1
        try:
            contextvars.copy_context().run(fn)
        finally:
            with self._lock:
                self._running -= 1
                if self._queued_waiters:
                    self._free.notify()

    def _admit(self) -> None:
        """Under ``_lock``: make room for one more job (waiting up to ``wait_timeout``) or raise."""
        if self._pid != os.getpid():  # threads do not survive a fork (gunicorn preloads, then forks)
            self._pid, self._running, self._idle, self._jobs = os.getpid(), 0, 0, queue.SimpleQueue()
        if self._running >= self.max_workers and not self._wait_for_slot():
            raise MCPError(INTERNAL_ERROR, f"Server busy: no worker thread became free within {self.wait_timeout}s")

    def _wait_for_slot(self) -> bool:
        """Wait (holding ``_lock`` between waits) until a job finishes; ``False`` after ``wait_timeout``."""
        deadline = time.monotonic() + self.wait_timeout
        self._queued_waiters += 1
        try:
            while self._running >= self.max_workers:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._free.wait(remaining)
            return True
        finally:
            self._queued_waiters -= 1

    def _work(self, jobs: queue.SimpleQueue[_Job | None], generation: int) -> None:
        while True:
            try:
                job = jobs.get(timeout=self.idle_timeout)
            except queue.Empty:
                with self._lock:
                    if jobs.empty():  # no job is promised to an idle thread: this one may end
                        self._idle -= 1
                        return
                continue
            if job is None:  # close(): this idle thread is no longer counted
                return
            fn, then = job
            try:
                fn()
            except BaseException:  # a job reports its own failures; this only keeps the thread alive
                logger.exception("a worker job failed")
            with self._lock:
                self._running -= 1
                if self._queued_waiters:
                    self._free.notify()
                retired = generation != self._generation  # closed while this job ran
                if not retired:
                    self._idle += 1
            if then is not None:
                try:
                    then()
                except BaseException:
                    logger.exception("a worker job's last step failed")
            if retired:
                return

    def close(self) -> None:
        """End the idle threads now and the busy ones when their job does (their waits are released
        elsewhere); a later ``submit`` starts new threads."""
        with self._lock:
            self._generation += 1
            for _ in range(self._idle):
                self._jobs.put(None)
            self._idle = 0


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
        self._lock = threading.Lock()
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


class Outbox(ABC):
    """The channel one request's outgoing messages travel on, in order, ending with its response.

    ``can_request`` says whether server-to-client requests may travel here (a JSON-only response, a
    2026-07-28 request or a single-threaded WSGI server cannot carry them).
    """

    def __init__(self, can_request: bool = True) -> None:
        self.can_request = can_request
        self.cancelled = threading.Event()
        # _lock guards _done, _waiters and _on_end.
        self._lock = threading.Lock()
        self._done = False
        self._waiters: set[Waiter] = set()
        self._on_end: list[Callable[[], None]] | None = None

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
            callbacks, self._on_end = self._on_end, None
        self._deliver(response, True)
        for callback in callbacks or ():
            callback()

    def time_out(self, response: Message) -> None:
        """The request ran out of time: answer ``response`` now and mark it cancelled, so its body
        (which no one can interrupt) sees ``ctx.cancelled``, sends nothing more and, when it
        returns, has its own answer dropped. A question it is waiting on ends at once."""
        self.cancelled.set()
        self.close(response)
        with self._lock:
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.fail(jsonrpc.connection_closed())

    def abort(self) -> None:
        """The client went away: mark the request cancelled and end every wait it has."""
        self.cancelled.set()
        with self._lock:
            waiters = list(self._waiters)
            callbacks, self._on_end = self._on_end, None
        for waiter in waiters:
            waiter.fail(jsonrpc.connection_closed())
        for callback in callbacks or ():
            callback()

    def on_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, when this request ends (answered or aborted); now if it has.

        What no worker's ``finally`` ends (an open ``subscriptions/listen``) leaves its bookkeeping here.
        """
        with self._lock:
            if not self._done and not self.cancelled.is_set():
                if self._on_end is None:
                    self._on_end = []
                self._on_end.append(callback)
                return
        callback()

    @property
    def backlog(self) -> int:
        """Messages queued here that the transport has not taken yet (0 where it writes at once)."""
        return 0

    def close_stream(self) -> None:
        """Let the transport end the response connection now while the request keeps running.

        Only a resumable stream (``EventLog``) can do this: the client reconnects and receives the
        rest from the log. Everywhere else there is no way back to the client, so this is a no-op.
        """

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
    """An outbox the transport drains from its own thread (an HTTP response body, an in-memory call).

    The messages travel on a ``SimpleQueue`` (C-implemented put and get with timeout): every call's
    answer crosses from its worker to the transport here. ``abort`` puts a ``None`` that ends the
    current wait early.
    """

    def __init__(self, can_request: bool = True) -> None:
        super().__init__(can_request)
        self._queue: queue.SimpleQueue[tuple[Message, bool] | None] = queue.SimpleQueue()

    def _deliver(self, message: Message, final: bool) -> None:
        self._queue.put((message, final))

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

    def get(self, timeout: float) -> tuple[Message, bool] | None:
        """The next message and whether it is the final response; ``None`` after ``timeout`` seconds,
        or at once when the request is aborted (a stream with no final response then ends)."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def abort(self) -> None:
        super().abort()
        self._queue.put(None)

    def drain(self, on_message: Callable[[Message], None], method: str, timeout: float | None) -> Message:
        """The request's messages until its response, each interim one to ``on_message`` on this
        thread; ``timeout`` bounds the whole wait, as over HTTP, so a server that keeps sending
        progress cannot hold the caller past it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            item = self.get(min(remaining, 1.0)) if remaining > 0 else None
            if self.cancelled.is_set():
                raise jsonrpc.connection_closed()
            if item is None:
                if deadline is not None and time.monotonic() >= deadline:
                    self.abort()
                    raise MCPError(REQUEST_TIMEOUT, f"Request '{method}' timed out")
                continue
            message, final = item
            if final:
                return message
            on_message(message)


@dataclass(frozen=True)
class LogEntry:
    """One entry of an ``EventLog``: ``message`` is ``None`` where the server ended the connection."""

    seq: int
    message: Message | None
    final: bool


class EventLog(Outbox):
    """A resumable outbox: every message is kept, numbered, so a reconnecting client can replay it.

    Readers never consume: the response that first carries the stream and every later resumption
    (``Last-Event-ID``) read from their own position. ``close_stream`` appends a marker where the
    current reader ends its connection. The log is bounded: past ``max_events`` the oldest entries
    are dropped, and a reader that fell behind them continues from the oldest one kept.
    """

    def __init__(self, stream_id: str, can_request: bool = True, max_events: int = 1024) -> None:
        super().__init__(can_request)
        self.stream_id = stream_id
        # _cond guards _events and _last; finished_at is set once under it and may be read without
        # it (a single attribute read) by whoever decides whether the finished log is still kept.
        self._cond = threading.Condition(threading.Lock())
        self._events: deque[LogEntry] = deque(maxlen=max_events)
        self._last = 0
        self.finished_at: float | None = None

    def _append(self, message: Message | None, final: bool) -> None:
        with self._cond:
            self._last += 1
            self._events.append(LogEntry(self._last, message, final))
            if final:
                self.finished_at = time.monotonic()
            self._cond.notify_all()

    def _deliver(self, message: Message, final: bool) -> None:
        self._append(message, final)

    def close_stream(self) -> None:
        if not self.done:
            self._append(None, False)

    def share(self) -> None:
        """The answer became a stream a client may resume: make it readable where resumptions
        arrive. Here, in this process only, where the log already is."""

    def entries(self) -> list[LogEntry]:
        """What the log holds now, oldest first."""
        with self._cond:
            return list(self._events)

    def read(self, after: int, timeout: float) -> LogEntry | None:
        """The first entry after sequence number ``after``; ``None`` if none arrives within ``timeout``."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._last > after, timeout):
                return None
            oldest = self._events[0]
            if oldest.seq > after + 1:
                logger.warning("stream %s: events %d-%d were dropped before a reader got them",
                               self.stream_id, after + 1, oldest.seq - 1)
                return oldest
            return self._events[after - oldest.seq + 1]

    def event_id(self, seq: int) -> str:
        """The SSE id of entry ``seq`` (0: the priming event), what a client resumes from."""
        return f"{self.stream_id}:{seq}"

    @property
    def last(self) -> int:
        """The sequence number of the newest entry (0 while the log is empty)."""
        with self._cond:
            return self._last

    def exhausted(self, after: int) -> bool:
        """Whether a reader past ``after`` has seen the final response and nothing can follow."""
        with self._cond:
            return self.finished_at is not None and after >= self._last


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
