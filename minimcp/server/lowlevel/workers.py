"""Threads and waits: every thread, queue, blocking wait and clock of the server core lives here.

Rules this file owns:
- every tool call (and every other handler that runs user code that may block) runs as a job of
  one bounded pool, on one of its workers or (``run_here``) on the transport's thread when that
  thread would only wait; a request that cannot get a slot within ``wait_timeout`` is refused;
- every wait is bounded: a worker blocked on the client gives up after its timeout (``Waiter``),
  a taker of a ``Channel`` after its own;
- a call that outlives its timeout is answered from one deadline thread (``Deadlines``), since a
  worker thread cannot be interrupted.

The rest of the core (outboxes, pending requests, sessions, listens) reaches threads only through
this module's names, so what it costs and how it waits is decided in one place. ``Lock``, ``RLock``,
``Condition`` and ``Event`` are the ``threading`` ones themselves, not wrappers: a lock guarding a
dict is taken on every call, and an extra Python frame there would be paid on every call too.
"""

from __future__ import annotations

import contextvars
import functools
import heapq
import itertools
import logging
import os
import queue
import threading
import time
from typing import Callable, Generic, Optional, TypeVar

from minimcp.jsonrpc import MCPError, Message
from minimcp.types import INTERNAL_ERROR

logger = logging.getLogger("minimcp.server.workers")

Lock = threading.Lock
RLock = threading.RLock
Condition = threading.Condition
Event = threading.Event
#: Seconds on a clock that never goes back, for idle times and deadlines.
monotonic = time.monotonic
#: Seconds since the epoch, for what travels to another process (a sealed ``requestState``'s ``iat``).
wall_clock = time.time

T = TypeVar("T")


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
        self._lock = Lock()
        self._free = Condition(self._lock)
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
    """One outstanding server-to-client request: the worker waits, a later message resolves it.

    The outcome travels on a ``SimpleQueue`` (a C-implemented put and a bounded get): the first
    ``resolve`` or ``fail`` is what the one ``wait`` gets, and a later one stays unread with the waiter.
    """

    __slots__ = ("_outcome",)

    def __init__(self) -> None:
        self._outcome: queue.SimpleQueue[Message | MCPError] = queue.SimpleQueue()

    def resolve(self, response: Message) -> None:
        self._outcome.put(response)

    def fail(self, error: MCPError) -> None:
        self._outcome.put(error)

    def wait(self, timeout: float) -> Message | None:
        """The client's JSON-RPC response, ``None`` on timeout; raises the failure that ended the wait."""
        try:
            outcome = self._outcome.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(outcome, MCPError):
            raise outcome
        return outcome


class Channel(Generic[T]):
    """What one thread puts and another takes with a bounded wait: a C-implemented ``SimpleQueue``
    (put and get with timeout), since every call's answer crosses from its worker to the transport
    on one."""

    __slots__ = ("_queue", "put")

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[T] = queue.SimpleQueue()
        self.put: Callable[[T], None] = self._queue.put

    def get(self, timeout: float) -> T | None:
        """The next item, or ``None`` when none arrives within ``timeout`` seconds."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def qsize(self) -> int:
        return self._queue.qsize()


class _Entry:
    __slots__ = ("callback", "disarmed")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.disarmed = False  # one bool write, read by the deadline thread: no lock needed


class Deadlines:
    """Callbacks run when their time is up: ``arm(seconds, callback)`` -> ``disarm``.

    One thread serves every deadline of a server; it starts with the first one armed and ends once
    none has been pending for ``idle_timeout`` seconds.

    ``_cond`` (its lock) guards ``_heap`` (deadline, order, entry) and ``_thread``.
    """

    def __init__(self, idle_timeout: float = 60.0, thread_name: str = "minimcp-deadlines") -> None:
        self.idle_timeout = idle_timeout
        self.thread_name = thread_name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Entry]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` in ``seconds`` unless the returned function is called first."""
        entry = _Entry(callback)
        with self._cond:
            heapq.heappush(self._heap, (monotonic() + seconds, next(self._order), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
                self._thread.start()
            self._cond.notify()

        def disarm() -> None:
            entry.disarmed = True

        return disarm

    def _run(self) -> None:
        while True:
            due: list[_Entry] = []
            with self._cond:
                while self._heap and self._heap[0][2].disarmed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait(self.idle_timeout)
                    if not self._heap:
                        self._thread = None
                        return
                    continue
                now = monotonic()
                while self._heap and self._heap[0][0] <= now:
                    due.append(heapq.heappop(self._heap)[2])
                if not due:
                    self._cond.wait(self._heap[0][0] - now)
                    continue
            for entry in due:
                if entry.disarmed:
                    continue
                try:
                    entry.callback()
                except Exception:  # the thread serves every deadline: one failing callback must not end it
                    logger.exception("a deadline callback failed")


__all__ = ["Channel", "Condition", "Deadlines", "Event", "Lock", "RLock", "Waiter", "WorkerPool", "monotonic",
           "wall_clock"]
