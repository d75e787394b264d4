"""The HTTP server's worker threads: started on demand up to a bound, ended when idle.

The server's own, not the MCP server's call pool: a request holds its worker while the app runs
and while its connection waits ``KEEP_ALIVE_GRACE`` for the next request, so the bound is the
number of connections served at once, and a full pool refuses at once (the loop answers ``503``)
rather than making the loop wait.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import queue
import threading
from typing import Callable

logger = logging.getLogger("minimcp.httpd")

#: One queued job: the work, and what runs once its worker is counted free.
_Job = tuple[Callable[[], None], Callable[[], None]]


class Busy(Exception):
    """Every worker is taken."""


class Workers:
    """Up to ``max_workers`` threads; one idle for ``idle_timeout`` seconds ends.

    Jobs travel on a C-implemented ``SimpleQueue``. ``_lock`` guards ``_running`` (jobs accepted
    and not finished), ``_idle`` (threads waiting for a job and not yet promised one) and
    ``_generation`` (advanced by ``close()``: a thread of an older generation ends after its job);
    jobs are put on the queue under it, so a thread that timed out can tell, under the same lock,
    whether a job is still meant for it.
    """

    def __init__(self, max_workers: int, idle_timeout: float, thread_name: str) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.idle_timeout = idle_timeout
        self.thread_name = thread_name
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._running = 0
        self._idle = 0
        self._generation = 0

    def submit(self, fn: Callable[[], None], then: Callable[[], None]) -> None:
        """Run ``fn`` on a worker, in a copy of the caller's ``contextvars`` context (so what one
        request sets never leaks into the next on the same thread); raise ``Busy`` when every
        worker is taken, ``RuntimeError`` when the system refuses a thread. ``then`` runs on the
        same thread after ``fn``, once the worker is counted free."""
        job = (functools.partial(contextvars.copy_context().run, fn), then)
        with self._lock:
            if self._running >= self.max_workers:
                raise Busy(f"all {self.max_workers} workers are busy")
            if self._idle:
                self._idle -= 1  # promised to this job
            else:  # may raise RuntimeError: then nothing was counted
                threading.Thread(target=self._work, args=(self._generation,), name=self.thread_name,
                                 daemon=True).start()
            self._running += 1
            self._jobs.put(job)

    def _work(self, generation: int) -> None:
        jobs = self._jobs
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
                retired = generation != self._generation  # closed while this job ran
                if not retired:
                    self._idle += 1
            try:
                then()
            except BaseException:
                logger.exception("a worker job's last step failed")
            if retired:
                return

    def close(self) -> None:
        """End the idle threads now and the busy ones when their job does."""
        with self._lock:
            self._generation += 1
            for _ in range(self._idle):
                self._jobs.put(None)
            self._idle = 0
