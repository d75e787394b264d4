"""The worker pool every transport shares: what a job's ``then`` step may rely on."""

from __future__ import annotations

import threading

from minimcp import MCPError
from minimcp.server.lowlevel.workers import WorkerPool


def test_then_runs_once_the_worker_is_counted_free() -> None:
    """A full pool (one worker, no wait) still takes a job submitted from ``then``: the HTTP server
    hands a connection back from there, and its next request must not be refused as "Server busy"."""
    pool = WorkerPool(1, wait_timeout=0.0)
    seen: list[str] = []
    finished = threading.Event()

    def then() -> None:
        try:
            pool.submit(lambda: seen.append("next"), then=finished.set)
        except MCPError as exc:
            seen.append(str(exc))
            finished.set()

    pool.submit(lambda: seen.append("first"), then=then)
    assert finished.wait(10)
    assert seen == ["first", "next"]
    pool.close()


def test_a_failing_step_does_not_end_the_worker() -> None:
    pool = WorkerPool(1, wait_timeout=5.0)
    finished = threading.Event()

    def fail() -> None:
        raise RuntimeError("a job's own fault")

    pool.submit(fail, then=fail)
    pool.submit(lambda: None, then=finished.set)
    assert finished.wait(10)
    pool.close()
