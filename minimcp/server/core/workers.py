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
this module's names, so what it costs and how it waits is decided in one place. The pool's
mechanics are ``minimcp.thread_pool``'s, which minimcp's HTTP server runs its requests on too. ``Lock``, ``RLock``,
``Condition`` and ``Event`` are the ``threading`` ones themselves, not wrappers: a lock guarding a
dict is taken on every call, and an extra Python frame there would be paid on every call too.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from typing import Callable, TypeVar

from minimcp.jsonrpc import MCPError, Message
from minimcp.thread_pool import ThreadPool
from minimcp.types import INTERNAL_ERROR

__all__ = ["Channel", "Condition", "Deadlines", "Event", "Lock", "RLock", "Waiter", "WorkerPool", "monotonic",
           "wall_clock"]

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


class WorkerPool(ThreadPool):
    """The bounded set of worker threads shared by every transport of one server: a job that finds
    no worker free within ``wait_timeout`` is answered with the "Server busy" error."""

    def refusal(self) -> Exception:
        return MCPError(INTERNAL_ERROR, f"Server busy: no worker thread became free within {self.wait_timeout}s")


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


class Channel(queue.SimpleQueue[T]):
    """What one thread puts and another takes with a bounded wait: every call's answer crosses from
    its worker to the transport on one. It is the C-implemented ``SimpleQueue`` itself, not a
    wrapper, so ``put`` and ``qsize`` (asked of every call's outbox) cost no Python frame; ``take``
    is the bounded ``get``."""

    __slots__ = ()

    def take(self, timeout: float) -> T | None:
        """The next item, or ``None`` when none arrives within ``timeout`` seconds."""
        try:
            return self.get(timeout=timeout)
        except queue.Empty:
            return None


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

