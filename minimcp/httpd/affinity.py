"""One CPU for one interpreter: the server's threads kept together on one core.

The threads of one process take turns holding the GIL. Spread over several cores, each turn is a
wake-up on another core (on a virtual machine, an interrupt between virtual CPUs, one of the
dearest things a guest does), and a request changes hands several times: from the loop to a
worker, between the workers serving at once, to a tool's worker and back for a legacy question.
On a 2-core machine, the same server measured 6-42% less CPU per call and 17-77% more calls/s
with its threads on one core (``benchmarks/cpu.py --baseline``, echo and elicitation in both eras,
8 and 32 clients, four runs). Python runs on one core at a time anyway; what a second core could run beside it is
the work done without the GIL (the system calls of the sockets, a large hash), the smaller part.
A process that needs more cores needs more processes: gunicorn's ``-w N`` with minimcp's worker
class puts worker ``k`` on the ``k``-th CPU.

It applies only where it helps and is possible: Linux (``os.sched_setaffinity``), an interpreter
with a GIL (a free-threaded one runs threads in parallel for real), and a thread allowed more than
one CPU (a container given one core is pinned already). Where the system refuses (a sandbox's
seccomp filter), the threads run where it puts them, as without this.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def _gil_enabled() -> bool:
    is_enabled: Callable[[], bool] | None = getattr(sys, "_is_gil_enabled", None)
    return True if is_enabled is None else is_enabled()


def _current_cpu(allowed: list[int]) -> int:
    """The CPU the calling thread last ran on (``/proc``'s ``processor`` field), if it is allowed."""
    try:
        with open("/proc/thread-self/stat", "rb") as stat:
            cpu = int(stat.read().rsplit(b")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return allowed[0]
    return cpu if cpu in allowed else allowed[0]


def pin(index: int | None = None) -> Callable[[], None] | None:
    """Keep the calling thread, and every thread it starts from now on (they inherit it), on one of
    the CPUs it may use: the ``index``-th of them (modulo their number), by default the one it runs
    on now. Returns what gives the calling thread its CPUs back (threads it started meanwhile keep
    theirs), or ``None`` where this does not apply (see the module docstring) or the system refuses it."""
    setaffinity = getattr(os, "sched_setaffinity", None)
    if setaffinity is None or not _gil_enabled():
        return None
    try:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return None
        cpu = allowed[index % len(allowed)] if index is not None else _current_cpu(allowed)
        setaffinity(0, {cpu})
    except OSError:  # a sandbox that forbids it (seccomp): the threads run where the system puts them
        return None

    def unpin() -> None:
        try:
            setaffinity(0, allowed)
        except OSError:
            pass

    return unpin
