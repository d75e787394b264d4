"""A rate per key (a client's address): how an anonymous endpoint keeps one caller from flooding it.

``RateLimiter`` is a token bucket per key: ``limit`` requests at once, then one more every
``window / limit`` seconds. It is sans-I/O (the caller passes the key and reads back how long to
wait) and bounded: it remembers at most ``max_keys`` keys, forgetting the one seen longest ago, so
a flood from many addresses costs memory no more than a fixed table.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class RateLimiter:
    def __init__(self, limit: int, window: float, *, max_keys: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("a rate needs limit >= 1 and window > 0")
        self.limit = limit
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._per_second = limit / window
        # _lock guards _buckets (key -> (tokens left, when they were counted)), shared by every
        # request thread; it is held for a dictionary update only.
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def retry_after(self, key: str) -> int | None:
        """Count one request from ``key``: ``None`` when it may go ahead, else the whole seconds
        until the next one may (a ``Retry-After`` value)."""
        now = self._clock()
        with self._lock:
            tokens, then = self._buckets.pop(key, (float(self.limit), now))
            tokens = min(float(self.limit), tokens + (now - then) * self._per_second)
            allowed = tokens >= 1
            self._buckets[key] = (tokens - 1 if allowed else tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        return None if allowed else max(1, math.ceil((1 - tokens) / self._per_second))


__all__ = ["RateLimiter"]
