"""``InMemoryTaskStore``: its bounds, its expiry and its atomic updates under concurrent use."""

from __future__ import annotations

import threading
import time

import pytest

from minimcp.server.tasks import InMemoryTaskStore, TaskExpired, TaskLimitReached, TaskNotFound, TaskRecord


def record(task_id: str, owner: str | None = "alice", ttl: float = 60.0, now: float | None = None) -> TaskRecord:
    now = time.time() if now is None else now
    return TaskRecord(task_id=task_id, owner=owner, status="working", created_at=now, updated_at=now,
                      ttl_ms=round(ttl * 1000), expires_at=now + ttl, poll_interval_ms=500)


def test_concurrent_creates_never_pass_the_per_owner_bound() -> None:
    store = InMemoryTaskStore(max_tasks_per_owner=100)
    accepted: list[str] = []
    refused: list[str] = []
    start = threading.Barrier(8)

    def create(worker: int) -> None:
        start.wait()
        for n in range(50):
            task_id = f"{worker}-{n}"
            try:
                store.create(record(task_id))
                accepted.append(task_id)
            except TaskLimitReached:
                refused.append(task_id)

    threads = [threading.Thread(target=create, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(accepted) == 100 and len(refused) == 300
    store.create(record("bob-1", owner="bob"))  # another owner has its own allowance


def test_a_finished_task_keeps_its_owners_place_until_it_expires_and_updates_are_atomic() -> None:
    now = [1000.0]
    store = InMemoryTaskStore(max_tasks_per_owner=1, clock=lambda: now[0])
    store.create(record("a", now=1000.0))
    with pytest.raises(TaskLimitReached, match="limit 1"):
        store.create(record("b", now=1000.0))
    counter = threading.Barrier(4)

    def bump() -> None:
        counter.wait()
        for _ in range(250):
            store.update("a", lambda r: r.changed(answers={"n": {"r": r.answers.get("n", {"r": 0})["r"] + 1}}))

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert store.get("a").answers["n"]["r"] == 1000
    assert store.update("a", lambda r: None) is None  # a declined change keeps the record
    store.update("a", lambda r: r.changed(status="completed", result={"content": []}))
    with pytest.raises(TaskLimitReached, match="finished ones count until they expire"):
        store.create(record("b", now=1000.0))
    store.create(record("bob-1", owner="bob", now=1000.0))  # another owner has its own allowance
    now[0] = 1061.0  # "a" expired: its place is free again
    store.create(record("b", now=1061.0))
    assert store.update("gone", lambda r: r) is None


def test_the_old_name_of_the_per_owner_limit_still_works() -> None:
    store = InMemoryTaskStore(max_live_per_owner=3)
    assert store.max_tasks_per_owner == store.max_live_per_owner == 3


def test_expiry_drops_the_record_and_remembers_whose_it_was() -> None:
    now = [1000.0]
    store = InMemoryTaskStore(max_tasks=2, max_tombstones=1, clock=lambda: now[0])
    store.create(record("a", ttl=10, now=1000.0))
    store.create(record("b", owner=None, ttl=20, now=1000.0))
    with pytest.raises(TaskLimitReached, match="maximum of 2"):
        store.create(record("c", now=1000.0))
    now[0] = 1015.0
    with pytest.raises(TaskExpired) as expired:
        store.get("a")
    assert expired.value.owner == "alice"
    assert len(store) == 1
    store.create(record("c", now=1015.0))  # the expired one's place is free again
    now[0] = 1025.0
    with pytest.raises(TaskExpired):
        store.get("b")
    with pytest.raises(TaskNotFound) as forgotten:  # past max_tombstones, only "not found" is left
        store.get("a")
    assert not isinstance(forgotten.value, TaskExpired)


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        InMemoryTaskStore(max_tasks=0)
