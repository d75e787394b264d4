"""``RedisTaskStore``: the tasks of every process of a deployment in one Redis (or Valkey).

Layout: every key starts with the prefix (so an ACL user granted ``~<prefix>:*`` reaches them all),
followed by one hash tag, ``{<tag>}``, the prefix's digest, so that a Redis Cluster keeps one store
in one slot and each script and transaction touches that slot alone (the bounds count every task of
the store at once), while the stores of differently prefixed servers land in different slots:

- ``<prefix>:{<tag>}:task:<id>``: the record as JSON, expiring with the task's TTL;
- ``<prefix>:{<tag>}:gone:<id>``: its owner as JSON, kept ``keep_expired`` seconds longer, so that
  a late poll by the owner hears "expired" (and anyone else "not found");
- ``<prefix>:{<tag>}:all`` and ``<prefix>:{<tag>}:owner:<owner>``: sorted sets of task ids by expiry
  time, which the bounds count.

The bounds, as ``TaskStore.create`` states them: at most ``max_tasks`` unexpired tasks in all and
``max_tasks_per_owner`` per owner, finished or not (a finished task counts against its owner until
it expires, so that a caller cannot fill the store by creating and finishing tasks quickly); an
owner of ``None`` (a one-client transport) is bound by the total only. ``create`` checks both and writes
in one Lua script (atomic on the server); ``update`` is an optimistic read-modify-write
(``WATCH``/``MULTI``), retried when another writer won. Expiry follows the store's ``clock``
(wall-clock seconds, as ``TaskRecord.expires_at``); Redis drops the keys on its own when their
time has passed.

A Redis that does not answer raises ``TaskStoreUnavailable`` (a -32603 for the client), never
``TaskNotFound``. Give the client a ``socket_timeout`` so that no request waits on a dead server
for longer than that.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable

from minimcp.server.backends.redis_clients import RedisClient, connection_options
from minimcp.server.core.faults import OWNER_FULL, STORE_FULL, TaskExpired, TaskLimitReached, TaskNotFound
from minimcp.server.core.faults import TaskStoreUnavailable
from minimcp.server.core.ports import Change, TaskRecord, TaskStore

try:
    import redis
except ImportError as missing:  # pragma: no cover - depends on the installation
    raise ImportError("RedisTaskStore needs redis-py: pip install 'minimcp-sync[redis]'") from missing

# KEYS: all, owner set, record, gone. ARGV: now, max_tasks, max per owner (0: none), record JSON, owner JSON,
# record PX, gone PX, expires_at, task id, owner set PX margin.
_CREATE = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('EXISTS', KEYS[3]) == 1 then return 3 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1 end
local per_owner = tonumber(ARGV[3])
if per_owner > 0 and redis.call('ZCARD', KEYS[2]) >= per_owner then return 2 end
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[6])
redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[7])
redis.call('ZADD', KEYS[1], ARGV[8], ARGV[9])
redis.call('ZADD', KEYS[2], ARGV[8], ARGV[9])
local last = tonumber(redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIRE', KEYS[2], math.ceil((last - now) * 1000) + tonumber(ARGV[10]))
return 0
"""

logger = logging.getLogger("minimcp.server.tasks")

#: How often ``update`` retries when other writers keep changing the record under it.
_ATTEMPTS = 50


class RedisTaskStore(TaskStore):
    """Tasks in Redis, shared by every process given a client of the same server.

    ``client`` is a ``redis.Redis`` (any ``decode_responses``) or a ``redis.cluster.RedisCluster``;
    ``prefix`` separates deployments sharing one Redis. ``max_tasks`` and ``max_tasks_per_owner`` are the bounds (see the module
    docstring), ``keep_expired`` how long (seconds) an expired task's owner is remembered, ``clock``
    the wall clock the expiry times are read against.
    """

    def __init__(self, client: RedisClient, *, prefix: str = "minimcp:tasks", max_tasks: int = 10_000,
                 max_tasks_per_owner: int = 100, keep_expired: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        if max_tasks < 1 or max_tasks_per_owner < 1:
            raise ValueError("max_tasks and max_tasks_per_owner must be at least 1")
        if keep_expired < 0:
            raise ValueError("keep_expired must not be negative")
        self.client = client
        self.prefix = prefix
        self.max_tasks = max_tasks
        self.max_tasks_per_owner = max_tasks_per_owner
        self.keep_expired = keep_expired
        self._clock = clock
        self._create = client.register_script(_CREATE)
        warn_if_unbounded(client, "RedisTaskStore")

    def _key(self, *parts: str) -> str:
        return key_in_slot(self.prefix, *parts)

    def create(self, record: TaskRecord) -> None:
        now = self._clock()
        left_ms = max(1, math.ceil((record.expires_at - now) * 1000))
        owner = "-" if record.owner is None else "=" + record.owner
        keys = [self._key("all"), self._key("owner", owner), self._key("task", record.task_id),
                self._key("gone", record.task_id)]
        per_owner = 0 if record.owner is None else self.max_tasks_per_owner
        args: list[str | int] = [
            repr(now), self.max_tasks, per_owner, _encode(record), json.dumps(record.owner), left_ms,
            left_ms + math.ceil(self.keep_expired * 1000), repr(record.expires_at), record.task_id,
            math.ceil(self.keep_expired * 1000) + 1000]
        with _reachable():
            outcome = int(self._create(keys=keys, args=args))
        if outcome == 1:
            raise TaskLimitReached(STORE_FULL.format(limit=self.max_tasks))
        if outcome == 2:
            raise TaskLimitReached(OWNER_FULL.format(limit=self.max_tasks_per_owner))
        if outcome == 3:
            raise ValueError(f"A task with id {record.task_id!r} exists already")

    def get(self, task_id: str) -> TaskRecord:
        with _reachable():
            raw, gone = self.client.mget(self._key("task", task_id), self._key("gone", task_id))
        if raw is not None:
            record = _decode(raw)
            if record.expires_at > self._clock():
                return record
            raise TaskExpired(task_id, record.owner)
        if gone is not None:
            raise TaskExpired(task_id, json.loads(gone))
        raise TaskNotFound(task_id)

    def update(self, task_id: str, change: Change) -> TaskRecord | None:
        key = self._key("task", task_id)
        with _reachable(), self.client.pipeline(transaction=True) as pipe:
            for _ in range(_ATTEMPTS):
                try:
                    pipe.watch(key)
                    raw = pipe.get(key)
                    current = None if raw is None else _decode(raw)
                    new = None if current is None or current.expires_at <= self._clock() else change(current)
                    if new is None:
                        pipe.unwatch()
                        return None
                    pipe.multi()
                    pipe.set(key, _encode(new), xx=True, keepttl=True)
                    if pipe.execute()[0]:
                        return new
                    return None  # the key expired between the read and the write
                except redis.WatchError:
                    continue
        raise TaskStoreUnavailable(f"Task {task_id} changed {_ATTEMPTS} times while being updated; try again")

    def __len__(self) -> int:
        with _reachable():
            return int(self.client.zcount(self._key("all"), f"({self._clock()!r}", "+inf"))


def key_in_slot(prefix: str, *parts: str) -> str:
    """``<prefix>:{<tag>}:<parts>``: a key under ``prefix`` in the one cluster slot its tag names."""
    tag = hashlib.sha256(prefix.encode()).hexdigest()[:8]
    return ":".join((prefix, "{" + tag + "}", *parts))


def warn_if_unbounded(client: RedisClient, user: str) -> None:
    """Say so when ``client`` would wait on an unresponsive Redis without end: every wait is bounded."""
    if connection_options(client).get("socket_timeout") is None:
        logger.warning("%s: the Redis client has no socket_timeout, so a request may wait on an unresponsive "
                       "Redis without end; create it with redis.Redis(..., socket_timeout=10)", user)


def _encode(record: TaskRecord) -> str:
    return json.dumps(dataclasses.asdict(record), separators=(",", ":"))


_FIELDS = frozenset(field.name for field in dataclasses.fields(TaskRecord))


def _decode(raw: bytes | str) -> TaskRecord:
    """The record, leaving out fields this version does not know (a newer process wrote it, mid-deploy)."""
    return TaskRecord(**{name: value for name, value in json.loads(raw).items() if name in _FIELDS})


@contextmanager
def _reachable() -> Iterator[None]:
    """Redis failures as ``TaskStoreUnavailable``: what the client hears is "try again", not "not found"."""
    try:
        yield
    except redis.RedisError as failure:
        raise TaskStoreUnavailable(f"The task store (Redis) is unavailable: {failure}") from failure
