"""Where tasks live in one process: ``InMemoryTaskStore``, the store every server starts with.

A store keeps what a client can observe of a task (status, timestamps, the pending input requests,
the answers given, the final result or error) as plain JSON-able data in a ``TaskRecord``. What
cannot be stored (the running thread, the tool's resolved arguments) stays with the ``TaskManager``
of the process that runs the body; the record names that process (``runner``), so that any other
process can send it a cancellation or a resumption over the manager's ``TaskChannel``.

The in-memory store is what one process needs: bounded in total and per owner, expired by TTL,
safe to share between threads. Its records vanish with the process: a restart forgets every task,
and a client polling one gets -32602 "Task not found". Several processes behind one endpoint share
a store (``RedisTaskStore``, or your own) that follows the rules of the ``TaskStore`` port
(``minimcp.server.core.ports``), as this one does.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from typing import Callable

from minimcp.server.core.faults import OWNER_FULL, STORE_FULL, TaskExpired, TaskLimitReached, TaskNotFound
from minimcp.server.core.ports import Change, TaskRecord, TaskStore
from minimcp.server.core.shares import Shares



class InMemoryTaskStore(TaskStore):
    """Tasks in a dict: at most ``max_tasks`` in all and ``max_tasks_per_owner`` per owner, each
    counted until it expires (``max_live_per_owner`` is the old name of the latter).

    Expired records are dropped as the store is used (a heap orders them by expiry), and their ids
    are remembered (the newest ``max_tombstones``) so that a late poll hears "expired" rather than
    "not found".
    """

    def __init__(self, *, max_tasks: int = 10_000, max_tasks_per_owner: int = 100,
                 max_tombstones: int = 10_000, clock: Callable[[], float] = time.time,
                 max_live_per_owner: int | None = None) -> None:
        per_owner = max_tasks_per_owner if max_live_per_owner is None else max_live_per_owner
        if max_tasks < 1 or per_owner < 1:
            raise ValueError("max_tasks and max_tasks_per_owner must be at least 1")
        self.max_tasks = max_tasks
        self.max_tombstones = max_tombstones
        self._clock = clock
        # _lock guards every attribute below; _per_owner's own lock is taken only inside it. Nothing
        # is called while it is held but dict, heap and arithmetic operations, _per_owner and the
        # caller's ``change`` (pure: it builds a new record).
        self._lock = threading.Lock()
        self._records: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []
        self._per_owner = Shares(per_owner, OWNER_FULL)
        self._tombstones: OrderedDict[str, str | None] = OrderedDict()  # expired id -> its owner

    @property
    def max_tasks_per_owner(self) -> int:
        return self._per_owner.limit

    @max_tasks_per_owner.setter
    def max_tasks_per_owner(self, value: int) -> None:
        self._per_owner.limit = value

    max_live_per_owner = max_tasks_per_owner

    def create(self, record: TaskRecord) -> None:
        with self._lock:
            self._sweep()
            if len(self._records) >= self.max_tasks:
                raise TaskLimitReached(STORE_FULL.format(limit=self.max_tasks))
            if not self._per_owner.try_take(record.owner):
                raise TaskLimitReached(self._per_owner.refusal.format(limit=self._per_owner.limit))
            self._records[record.task_id] = record
            heapq.heappush(self._expiry, (record.expires_at, record.task_id))

    def get(self, task_id: str) -> TaskRecord:
        with self._lock:
            self._sweep()
            record = self._records.get(task_id)
            if record is not None:
                return record
            if task_id in self._tombstones:
                raise TaskExpired(task_id, self._tombstones[task_id])
            raise TaskNotFound(task_id)

    def update(self, task_id: str, change: Change) -> TaskRecord | None:
        with self._lock:
            self._sweep()
            current = self._records.get(task_id)
            if current is None:
                return None
            new = change(current)
            if new is None:
                return None
            self._records[task_id] = new
            return new

    def __len__(self) -> int:
        with self._lock:
            self._sweep()
            return len(self._records)

    def _sweep(self) -> None:
        """Drop every record whose TTL elapsed (caller holds ``_lock``)."""
        now = self._clock()
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            record = self._records.pop(task_id, None)
            if record is None:
                continue
            self._per_owner.give_back(record.owner)
            self._tombstones[task_id] = record.owner
            if len(self._tombstones) > self.max_tombstones:
                self._tombstones.popitem(last=False)
