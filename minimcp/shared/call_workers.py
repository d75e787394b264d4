"""The call workers of the MCP servers in this process, which an HTTP server sizes its threads by.

A legacy (2025-11-25) call that asks its client something holds one of its server's call workers
(``max_workers``) and the request thread streaming its answer until the client answers; its
client's GET stream holds another request thread, and the answer needs a free one to arrive on.
So a process serving legacy clients needs request threads for ``max_workers`` call streams, as
many GET streams, and room for the answers; an HTTP server that knows its thread count (minimcp's
gunicorn worker class) compares it with ``threads_needed`` at start-up and says what to set.
"""

from __future__ import annotations

import threading
import weakref

__all__ = ["declare", "threads_needed"]

# _lock guards _declared: each server (held weakly) and its max_workers.
_lock = threading.Lock()
_declared: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()


def declare(server: object, max_workers: int) -> None:
    """``server`` runs its calls on ``max_workers`` workers (forgotten with the server)."""
    with _lock:
        _declared[server] = max_workers


def threads_needed() -> int:
    """Request threads that hold every call worker's stream and a GET stream per asking client:
    twice the call workers of the servers declared here (0 for none)."""
    with _lock:
        return 2 * sum(_declared.values())
