"""The worker pool every transport shares, and the HTTP server too: what a job's ``then`` step may
rely on, and how a full one refuses."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from minimcp import MCPError
from minimcp.server.lowlevel.workers import WorkerPool
from minimcp.thread_pool import PoolFull, ThreadPool


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


@pytest.mark.parametrize(("pool", "refused"), [(ThreadPool(1, wait_timeout=0.0), PoolFull),
                                                (WorkerPool(1, wait_timeout=0.0), MCPError)])
def test_a_full_pool_that_may_not_wait_refuses_at_once(pool: ThreadPool, refused: type[Exception]) -> None:
    """The HTTP server's pool (``PoolFull``, which the loop answers 503) and the core's ("Server
    busy"): the same pool, each with its own refusal, and a refused job leaves the count alone."""
    release, started, freed, done = threading.Event(), threading.Event(), threading.Event(), threading.Event()
    pool.submit(lambda: (started.set(), release.wait(10)), then=freed.set)
    assert started.wait(10)
    with pytest.raises(refused, match="busy"):
        pool.submit(lambda: None)
    release.set()
    assert freed.wait(10)
    pool.submit(done.set)
    assert done.wait(10)
    pool.close()


def test_a_pool_made_before_a_fork_runs_jobs_in_the_child() -> None:
    """gunicorn's ``--preload`` builds the app, then forks: the child's pool counts an idle thread
    that stayed in the parent, and a job promised to it would never run."""
    pool = ThreadPool(2, wait_timeout=5.0)
    idle = threading.Event()
    pool.submit(lambda: None, then=idle.set)  # ``then`` runs once the worker is counted idle, its lock let go
    assert idle.wait(10)  # one idle thread now, in this process only
    pid = os.fork()
    if pid == 0:  # the child: report through the exit status, never return into pytest
        done = threading.Event()
        try:
            pool.submit(done.set)
            os._exit(0 if done.wait(10) else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 30
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if ended[0] == 0:  # a child stuck for good: end it, and fail
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    pool.close()
    assert ended[0] == pid and os.waitstatus_to_exitcode(ended[1]) == 0
