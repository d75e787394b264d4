"""Verified tokens remembered until they expire, so a client's every call does not pay a signature
check or an introspection round trip.

Entries are keyed by a SHA-256 of the token (the cache holds no usable credential as a key), never
outlive the token's ``exp`` (nor ``max_age`` when one is set), and the least recently used entry
leaves when ``max_entries`` is reached: a flood of distinct tokens costs bounded memory.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from minimcp.server.auth.provider import AccessToken


class TokenCache:
    def __init__(self, max_entries: int = 10_000, max_age: float | None = None) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be 0 or more, got {max_entries}")
        self.max_entries = max_entries
        self.max_age = max_age
        # _lock guards _entries (key -> (access token, expiry as a Unix time)) and their LRU order.
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[AccessToken, float]] = OrderedDict()

    @staticmethod
    def key(token: str) -> bytes:
        return hashlib.sha256(token.encode()).digest()

    def get(self, key: bytes) -> AccessToken | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[1] <= time.time():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: bytes, access: AccessToken) -> None:
        """Remember ``access`` until its expiry; a token without one is kept only for ``max_age``."""
        now = time.time()
        deadline = float(access.expires_at) if access.expires_at is not None else float("inf")
        if self.max_age is not None:
            deadline = min(deadline, now + self.max_age)
        if self.max_entries == 0 or deadline <= now or deadline == float("inf"):
            return
        with self._lock:
            self._entries[key] = (access, deadline)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
