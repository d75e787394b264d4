"""Deadlines: callbacks run when their time is up, for the calls of a server that have a timeout.

A worker thread cannot be interrupted, so a call that outlives its timeout is answered from here
instead (``Outbox.time_out``) while its body runs on to its end. One thread serves every deadline
of a server; it starts with the first one armed and ends once none has been pending for
``idle_timeout`` seconds.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

logger = logging.getLogger("minimcp.server.deadlines")


class _Entry:
    __slots__ = ("callback", "disarmed")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.disarmed = False  # one bool write, read by the deadline thread: no lock needed


class Deadlines:
    """``arm(seconds, callback)`` -> ``disarm``.

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
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._order), entry))
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
                now = time.monotonic()
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


__all__ = ["Deadlines"]
