"""Where tasks live: the ``TaskStore`` interface and the in-memory store every server starts with.

A store keeps what a client can observe of a task (status, timestamps, the pending input requests,
the answers given, the final result or error) as plain JSON-able data in a ``TaskRecord``. What
cannot be stored (the running thread, the tool's resolved arguments) stays with the ``TaskManager``
of the process that runs the body; the record names that process (``runner``), so that any other
process can send it a cancellation or a resumption over the manager's ``TaskChannel``.

The in-memory store is what one process needs: bounded in total and per owner, expired by TTL,
safe to share between threads. Its records vanish with the process: a restart forgets every task,
and a client polling one gets -32602 "Task not found". Several processes behind one endpoint share
a store (``RedisTaskStore`` in ``redis_store.py``, or your own ``TaskStore``) with the same three
rules: ``create`` refuses past the limits, ``get`` says ``TaskExpired`` (naming the owner) or
``TaskNotFound``, ``update`` is an atomic read-modify-write. A shared store that cannot be reached
raises ``TaskStoreUnavailable``, which a client hears as a -32603 to retry, never as "not found".

The limits' rule, which every store follows (see ``TaskStore.create``): **every record counts
against its owner until it expires**, finished or not. A finished task still occupies the store
for its TTL, so if finishing freed the owner's place, one caller could churn through quick tasks
until the store's total was full for everyone.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from minimcp.server.core.shares import Shares
from minimcp.shared.tasks import TERMINAL


#: What ``create`` says when the store is full, and when the record's owner is (``{limit}`` filled in).
STORE_FULL = "The server holds its maximum of {limit} tasks; try again when some have expired"
OWNER_FULL = ("Too many tasks kept for this caller (limit {limit}; finished ones count until they expire); "
              "try again when some have expired")


class TaskNotFound(LookupError):
    """No task with this id is visible to the caller (unknown, purged, or someone else's)."""


class TaskExpired(TaskNotFound):
    """The task's TTL elapsed and the store discarded it; ``owner`` is whom it belonged to."""

    def __init__(self, task_id: str, owner: str | None) -> None:
        super().__init__(task_id)
        self.owner = owner


class TaskLimitReached(RuntimeError):
    """The store is full, or the owner already holds as many tasks as allowed (finished ones count
    until they expire)."""


class TaskStoreUnavailable(RuntimeError):
    """The shared state behind the tasks (a store or a channel over the network) did not answer.

    Distinct from ``TaskNotFound`` on purpose: a client told "not found" starts over, while this is
    a -32603 that a retry may get past."""


@dataclass(frozen=True)
class TaskRecord:
    """One task as a client observes it. Frozen: a change is a new record, stored atomically.

    ``owner`` is the principal the task belongs to, as ``minimcp.server.core.shares`` keys it
    (``user:<subject>``, else ``session:<legacy session id>``, else ``address:<client address>``;
    ``None`` on a one-client transport such as stdio). ``expires_at`` is wall-clock seconds. ``answers`` maps each input
    request key to ``{"d": digest of the question, "r": the client's answer}``; ``state`` is the
    ``requestState`` a hand-built ``InputRequiredResult`` carried into the next run. ``runner`` is
    the ``TaskChannel.process_id`` of the process holding the body (``None``: this process).
    """

    task_id: str
    owner: str | None
    status: str
    created_at: float
    updated_at: float
    ttl_ms: int
    expires_at: float
    poll_interval_ms: int
    status_message: str | None = None
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    runner: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def changed(self, **changes: Any) -> TaskRecord:
        """This record with ``changes`` and a fresh ``updated_at``."""
        return dataclasses.replace(self, updated_at=time.time(), **changes)


Change = Callable[[TaskRecord], "TaskRecord | None"]


class TaskStore(ABC):
    """The interface a task store implements; see the module docstring for the rules."""

    @abstractmethod
    def create(self, record: TaskRecord) -> None:
        """Keep ``record``; raise ``TaskLimitReached`` when the store or its owner is full.

        Full means: the store holds its maximum of records, or ``record.owner`` holds its maximum.
        Every record counts, finished or not, until its TTL elapses and the store drops it; an owner
        of ``None`` (a one-client transport) is bound by the total only. Keep the owner's maximum a
        small part of the total, so that one owner at its maximum leaves room for the others. Must
        be durable when it returns: a ``get`` that follows, from any process, finds it."""

    @abstractmethod
    def get(self, task_id: str) -> TaskRecord:
        """The record; ``TaskExpired`` (naming the owner) when its TTL elapsed, ``TaskNotFound`` when unknown."""

    @abstractmethod
    def update(self, task_id: str, change: Change) -> TaskRecord | None:
        """Apply ``change`` to the current record atomically and keep what it returns.

        ``change`` returns ``None`` to leave the record as it is. The answer is the record as
        stored afterwards (``None`` when ``change`` declined, or the task is gone or expired).
        ``change`` must be pure: an optimistic store calls it again when another writer won.
        """


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
