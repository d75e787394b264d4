"""The core's own implementations of its ports, for a server in one process (the default).

``MemoryBackend`` is what ``backend=None`` gives: a random sealing key of this process's, an
in-process bus, the tasks in the task manager's own store, and the legacy sessions in the HTTP
edge's memory. ``InMemorySubscriptionBus`` is its bus, and any server's that is given none.
Several processes share state through a backend of ``minimcp.server.backends`` instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence

from minimcp.server.core.ports import Listener, Stores, SubscriptionBus, TaskChannel, TaskStore
from minimcp.server.core.workers import Lock
from minimcp.shared.subscriptions import ServerEvent

__all__ = ["InMemorySubscriptionBus", "MemoryBackend"]

logger = logging.getLogger("minimcp.server")


class InMemorySubscriptionBus:
    """A ``SubscriptionBus`` within one process: ``publish`` calls each listener, in subscription order."""

    def __init__(self) -> None:
        # _lock guards _listeners. A token per subscription lets one callable subscribe twice.
        self._lock = Lock()
        self._listeners: dict[object, Listener] = {}

    def publish(self, event: ServerEvent) -> None:
        """Call every listener with ``event``; one that raises is logged and the others still hear it."""
        with self._lock:
            listeners = list(self._listeners.values())
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # fan-out boundary: one broken listener must not silence the rest
                logger.exception("a subscription listener raised; the event still goes to the others")

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token = object()
        with self._lock:
            self._listeners[token] = listener

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return unsubscribe


class MemoryBackend(Stores):
    """One process's state: a random sealing key of its own, an in-process bus, sessions in its memory.

    Right for stdio and for one HTTP process; behind several processes a legacy session lives only
    where it began (sticky sessions) and a requestState opens only where it was sealed, unless the
    keys are configured (``RequestStateSecurity(keys=...)``). A requestState may be used again
    within its ttl here: only a shared backend can tell every process it was spent.
    """

    shared = False
    retry_after = 1

    def __init__(self) -> None:
        # _lock guards _keys and _bus: each is made once, on first use.
        self._lock = Lock()
        self._keys: list[bytes] = []
        self._bus: SubscriptionBus | None = None

    def request_state_keys(self, seed: Sequence[bytes] = ()) -> list[bytes]:
        with self._lock:
            if not self._keys:
                self._keys.append(os.urandom(32))
            return list(self._keys)

    def rotate_request_state_keys(self) -> None:
        with self._lock:
            self._keys.insert(0, os.urandom(32))
            del self._keys[3:]

    def spend_request_state(self, digest: str, ttl: float) -> bool:
        return True

    def subscription_bus(self) -> SubscriptionBus:
        with self._lock:
            if self._bus is None:
                self._bus = InMemorySubscriptionBus()
            return self._bus

    def task_store(self) -> TaskStore | None:
        return None

    def task_channel(self) -> TaskChannel | None:
        return None

    def named_for(self, server_name: str) -> None:
        """Nothing here is named: this process's state is this server's alone."""

    def close(self) -> None:
        """Nothing to release."""
