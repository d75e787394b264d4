"""``MemoryBackend``: everything in this process, as minimcp has always kept it (the default)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minimcp.server.backends.base import Backend

if TYPE_CHECKING:
    from minimcp.server.app.subscriptions import SubscriptionBus


class MemoryBackend(Backend):
    """One process's state: a random sealing key of its own, an in-process bus, sessions in its memory.

    Right for stdio and for one HTTP process; behind several processes a legacy session lives only
    where it began (sticky sessions) and a requestState opens only where it was sealed, unless the
    keys are configured (``RequestStateSecurity(keys=...)``). A requestState may be used again
    within its ttl here: only a shared backend can tell every process it was spent.
    """

    shared = False

    def __init__(self) -> None:
        # _lock guards _keys and _bus: each is made once, on first use.
        self._lock = threading.Lock()
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
        from minimcp.server.app.subscriptions import InMemorySubscriptionBus

        with self._lock:
            if self._bus is None:
                self._bus = InMemorySubscriptionBus()
            return self._bus
