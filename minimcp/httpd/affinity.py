"""One CPU for one interpreter: the server's threads kept together on one core.

The threads of one process take turns holding the GIL. Spread over several cores, each turn is a
wake-up on another core (on a virtual machine, an interrupt between virtual CPUs, one of the
dearest things a guest does), and a request changes hands several times: from the loop to a
worker, between the workers serving at once, to a tool's worker and back for a legacy question.
On a 2-core machine, the same server measured 6-42% less CPU per call and 17-77% more calls/s
with its threads on one core (``benchmarks/cpu.py --baseline``, echo and elicitation in both eras,
8 and 32 clients, four runs). Python runs on one core at a time anyway; what a second core could
run beside it is the work done without the GIL (the system calls of the sockets, a large hash),
the smaller part. A process that needs more cores needs more processes: gunicorn's ``-w N`` with
minimcp's worker class puts worker ``k`` on the ``k``-th CPU. Pinned is not stuck: a server whose
CPU another process crowds moves to a quieter one (``Pin.look``).

It applies only where it helps and is possible: Linux (``os.sched_setaffinity``), an interpreter
with a GIL (a free-threaded one runs threads in parallel for real), and a thread allowed more than
one CPU (a container given one core is pinned already). Where the system refuses (a sandbox's
seccomp filter), the threads run where it puts them, as without this.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any


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


#: Seconds between two looks at how busy the CPUs are, stretched by up to half at random so that
#: two servers crowding one CPU do not both move at the same moment (and back again).
LOOK_EVERY = 2.0
#: The share of our CPU that other processes may keep busy before the server moves to a quieter one.
CROWDED = 0.5
#: The jitter's own generator: the ``random`` module's shared one is the application's (a seeded
#: test, Hypothesis, which flags any draw from it), and a server must not advance it.
_JITTER = random.Random()
#: Clock ticks per second, the unit of ``/proc/stat``.
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Pin:
    """The one CPU a server's threads run on, and the move to a quieter one.

    The kernel cannot move a pinned thread off a CPU another process keeps busy (a database, a
    second server pinned to the same core), so ``look`` does, every ``LOOK_EVERY`` seconds: when
    other processes took more than ``CROWDED`` of our CPU since the last look (its busy time from
    ``/proc/stat`` less this process's own CPU time) and another allowed CPU sat idle for more than
    that share, every thread of this process pinned to our CPU moves to the idlest one. Used by
    one thread at a time (the loop's, or ``ProcessPin``'s under its lock).
    """

    def __init__(self, cpu: int, allowed: list[int]) -> None:
        self.cpu = cpu
        self.allowed = allowed
        self.next_look = time.monotonic() + LOOK_EVERY
        self._last: tuple[dict[int, tuple[int, int]], float] | None = None

    def release(self) -> None:
        """Give the calling thread every allowed CPU back (the threads it started keep theirs)."""
        try:
            os.sched_setaffinity(0, self.allowed)
        except OSError:
            pass

    def look(self, now: float) -> None:
        """Move to a quieter CPU if another process crowds ours (see the class docstring)."""
        self.next_look = now + LOOK_EVERY * _JITTER.uniform(1.0, 1.5)
        try:
            times, own = _cpu_times(), _own_seconds()
        except (OSError, ValueError):
            return
        last, self._last = self._last, (times, own)
        if last is None or self.cpu not in times or self.cpu not in last[0]:
            return
        before, own_before = last
        busy = times[self.cpu][0] - before[self.cpu][0]
        total = times[self.cpu][1] - before[self.cpu][1]
        others = busy - (own - own_before) * _TICKS  # this process's time counted as ours, wherever it ran
        if total <= 0 or others / total <= CROWDED:
            return
        idle = {cpu: 1 - (times[cpu][0] - before[cpu][0]) / (times[cpu][1] - before[cpu][1])
                for cpu in self.allowed if cpu != self.cpu and cpu in times and cpu in before
                and times[cpu][1] > before[cpu][1]}
        quietest = max(idle, key=idle.__getitem__, default=None)
        if quietest is not None and idle[quietest] > CROWDED:
            self._move(quietest)

    def _move(self, cpu: int) -> None:
        _repin({self.cpu}, {cpu})
        self.cpu = cpu
        self._last = None  # the next look measures from the new CPU


def _repin(current: set[int], cpus: set[int]) -> None:
    """Every thread of this process whose CPUs are ``current`` runs on ``cpus`` from now on (none
    moves where ``/proc`` cannot list them)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return
    for task in tasks:
        try:
            if os.sched_getaffinity(int(task)) == current:
                os.sched_setaffinity(int(task), cpus)
        except (OSError, ValueError):  # the thread ended meanwhile
            pass


def _cpu_times() -> dict[int, tuple[int, int]]:
    """Each CPU's ``(busy, total)`` clock ticks since boot, from ``/proc/stat``."""
    times: dict[int, tuple[int, int]] = {}
    with open("/proc/stat", "rb") as stat:
        for line in stat:
            if line.startswith(b"cpu") and line[3:4].isdigit():
                name, *fields = line.split()
                user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields[:8])
                total = user + nice + system + idle + iowait + irq + softirq + steal
                times[int(name[3:])] = (total - idle - iowait, total)
    return times


def _own_seconds() -> float:
    """This process's CPU time, every thread's."""
    spent = os.times()
    return spent.user + spent.system


def pin(index: int | None = None) -> Pin | None:
    """Keep the calling thread, and every thread it starts from now on (they inherit it), on one of
    the CPUs it may use: the ``index``-th of them (modulo their number), by default the one it runs
    on now. Returns the ``Pin`` (``release`` gives the calling thread its CPUs back, ``look`` moves
    off a crowded CPU), or ``None`` where this does not apply (see the module docstring) or the
    system refuses it."""
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
    return Pin(cpu, allowed)


#: The WSGI servers that run their process for the app they serve (``SERVER_SOFTWARE``'s first
#: word): under them ``ProcessPin`` pins by default. A development server (werkzeug's, a test's)
#: shares its process with other work, whose threads a pin would confine too.
PRODUCTION_SERVERS = frozenset({"gunicorn", "waitress", "granian"})


class ProcessPin:
    """The same single CPU for an app served by another server's threads (gunicorn's gthread,
    waitress, granian): ``touch`` on each request pins every thread of the process on the first
    one, and looks for a crowded CPU (``Pin.look``) every few seconds of traffic after it.

    ``enabled``: ``None`` pins under a threaded server of ``PRODUCTION_SERVERS``, ``True`` under
    any threaded server, ``False`` never. Nothing is pinned where ``pin`` would not (see the module
    docstring), nor when the request's thread runs on one CPU already (minimcp's own server, or
    ``taskset``): whoever pinned it decided. ``_lock`` guards ``_decided`` and ``_pin``; a request
    finding it taken goes on unpinned-or-pinned as it is, without waiting.

    ``pending`` is whether ``touch`` has anything left to do: it turns ``False`` for good once the
    first request decided not to pin, so an unpinned process's requests skip the call altogether
    (a plain bool written under ``_lock`` and read without it: a stale ``True`` only costs a touch).
    """

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()
        self._decided = enabled is False
        self._pin: Pin | None = None
        self.pending = not self._decided

    def touch(self, environ: Mapping[str, Any]) -> None:
        """On each request: the first one decides; later ones look now and then (a clock read)."""
        pin = self._pin
        if self._decided and (pin is None or time.monotonic() < pin.next_look):
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self._decided:
                self._decided = True
                if self._wanted(environ):
                    self._pin = _pin_process()
                self.pending = self._pin is not None
            elif self._pin is not None:
                self._pin.look(time.monotonic())
        finally:
            self._lock.release()

    def _wanted(self, environ: Mapping[str, Any]) -> bool:
        if not environ.get("wsgi.multithread"):
            return False  # one thread per process: no turns at a GIL to keep on one core
        if self.enabled:
            return True
        software = str(environ.get("SERVER_SOFTWARE") or "")
        return software.split("/", 1)[0].strip().lower() in PRODUCTION_SERVERS

    @property
    def cpu(self) -> int | None:
        """The CPU the process's threads are pinned to, or ``None``."""
        pin = self._pin
        return None if pin is None else pin.cpu

    def release(self) -> None:
        """Give every thread pinned here its CPUs back (the app is closed)."""
        with self._lock:
            pin, self._pin = self._pin, None
            self._decided, self.pending = True, False
        if pin is not None:
            _repin({pin.cpu}, set(pin.allowed))


def _pin_process() -> Pin | None:
    """``pin()`` for every thread of this process that may use all its CPUs, not only the caller
    (threads started later inherit their starter's, so the server's next ones follow); ``None``
    where ``pin`` is, and when the caller runs on one CPU already."""
    pinned = pin()
    if pinned is not None:
        _repin(set(pinned.allowed), {pinned.cpu})
    return pinned
