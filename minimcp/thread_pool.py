"""The bounded thread pool minimcp's server runs its jobs on: tool calls and task bodies in the
server core (``minimcp.server.core.workers.WorkerPool``), requests in its HTTP server
(``minimcp.httpd``). One home for both, since each hand-off to a worker is paid on every call.

Not ``ThreadPoolExecutor``: its futures and a semaphore around it cost about four times as much per
job, it keeps its threads forever, and it cannot refuse a job when full.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import queue
import threading
import time
from typing import Callable, Optional, TypeVar

logger = logging.getLogger("minimcp.thread_pool")
T = TypeVar("T")

#: One queued job: the work, and what runs once its worker is counted free.
_Job = tuple[Callable[[], None], Optional[Callable[[], None]]]

#: The forks this process descends from, counted in each child as it starts (gunicorn preloads an
#: app, then forks its workers). A pool compares the count it was made under with this one to tell
#: that its threads stayed behind in the parent: a global read per job where ``os.getpid()`` was a
#: system call. Written only in a child just forked, while it has a single thread.
_forks = 0


def _count_fork() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):  # no fork, no count (Windows)
    os.register_at_fork(after_in_child=_count_fork)


class PoolFull(Exception):
    """Every worker was taken, and none became free within the pool's ``wait_timeout``."""


class ThreadPool:
    """Up to ``max_workers`` threads, started on demand; one idle for ``idle_timeout`` seconds ends.
    A job waits at most ``wait_timeout`` seconds for a free worker (0: refused at once), then the
    pool raises ``refusal()``.

    Jobs travel on a C-implemented ``SimpleQueue``. ``_lock`` (the lock of ``_free``) guards
    ``_running`` (jobs accepted and not finished), ``_idle`` (threads waiting for a job and not yet
    promised one), ``_queued_waiters``, ``_generation`` (advanced by ``close()``: a thread of an
    older generation ends after its job) and ``_forks``; jobs are put on the queue under it, so a
    thread that timed out can tell, under the same lock, whether a job is still meant for it.
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
        self._forks = _forks

    def refusal(self) -> Exception:
        """What a job that found no free worker in time raises."""
        return PoolFull(f"all {self.max_workers} workers are busy")

    def submit(self, fn: Callable[[], None], then: Callable[[], None] | None = None) -> None:
        """Run ``fn`` on a worker, or raise ``refusal()`` if none frees up in time (``RuntimeError``
        when the system refuses a thread).

        ``fn`` runs in a copy of the caller's ``contextvars`` context, as an asyncio task would, so
        what the caller set for the request (its access token, say) is current in the job, and what
        the job sets never leaks into the next one on the same thread. ``then`` runs on the same
        thread after ``fn``, once the worker is counted free: a job that signals "done" from there
        (a connection handed back for its next request) cannot have the next ``submit`` find the
        pool still full of it.
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

    def run_here(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the calling thread as one of this pool's jobs, or raise as ``submit`` does:
        it counts against ``max_workers`` while it runs, in a copy of the caller's ``contextvars``
        context, and what it returns is returned. For a caller that would otherwise only wait for
        the job to end: it saves the two thread handoffs, which under load cost more than a short
        job itself."""
        with self._lock:
            self._admit()
            self._running += 1
        try:
            return contextvars.copy_context().run(fn)
        finally:
            with self._lock:
                self._running -= 1
                if self._queued_waiters:
                    self._free.notify()

    def _admit(self) -> None:
        """Under ``_lock``: make room for one more job (waiting up to ``wait_timeout``) or raise."""
        if self._forks != _forks:  # made before a fork: its threads did not come along
            self._forks, self._running, self._idle, self._jobs = _forks, 0, 0, queue.SimpleQueue()
        if self._running >= self.max_workers and not self._wait_for_slot():
            raise self.refusal()

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


__all__ = ["PoolFull", "ThreadPool"]
