"""Threads and waits: every thread, queue, blocking wait and clock of the server core lives here.

The public path; the code lives in ``minimcp.server.core.workers``."""

from minimcp.server.core.workers import (
    Channel,
    Condition,
    Deadlines,
    Event,
    Lock,
    monotonic,
    RLock,
    Waiter,
    wall_clock,
    WorkerPool,
)

__all__ = ["Channel", "Condition", "Deadlines", "Event", "Lock", "monotonic", "RLock", "Waiter", "wall_clock", "WorkerPool"]
