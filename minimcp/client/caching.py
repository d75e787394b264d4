"""The client's response cache (SEP-2549, 2026-07-28): the official SDK's default, synchronous.

A 2026-07-28 server marks the results of the listing methods and ``resources/read`` with
``ttlMs`` (how long they stay fresh) and ``cacheScope`` (``"public"``: the same for every
caller; ``"private"``: only for the authorization context that asked). ``Client(url)`` keeps
them, by default in memory per client, and serves a fresh one without a round trip; a change
notification (``notifications/tools/list_changed``, a listen event, ``resources/updated``)
evicts what it makes stale. ``Client(cache=None)`` turns it off; each cacheable verb also
takes ``cache_mode`` (``"use"``, ``"refresh"``: fetch and store, ``"bypass"``: neither).

What is never cached: a legacy connection's answers (their hints do not count), a call that
carries ``meta`` (it expects a wire request; it refreshes the entry instead), continuation
pages, and anything reached through ``input_required`` rounds.

Threads: the coordinator and the in-memory store each guard their state with a lock; a store
of your own must be safe to call from several threads (a shared ``Client`` calls it from each).
A failing store is a miss, never a failed call; a warning says so once per failure burst.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from minimcp.shared.subscriptions import event_method, is_server_event
from minimcp.types import MODERN_PROTOCOL_VERSIONS, Result
from minimcp.types.methods import METHODS, Method

logger = logging.getLogger("minimcp.client")

CacheMode = Literal["use", "refresh", "bypass"]

#: No entry stays fresh longer than a day, whatever ``ttlMs`` the server sent.
MAX_TTL_MS: Final[int] = 24 * 60 * 60 * 1000
#: Keys whose in-flight fetches are tracked against a racing eviction; the oldest is dropped past it.
_GENERATION_CAP: Final[int] = 4096
Scope = Literal["public", "private"]
#: Notification method -> the cacheable methods it makes stale, from the method table's ``evicted_by``.
_STALE_AFTER: Final[dict[str, tuple[Method, ...]]] = {
    notification: tuple(row for row in METHODS.values() if notification in row.evicted_by)
    for notification in {name for row in METHODS.values() for name in row.evicted_by}}


@dataclass(frozen=True, slots=True)
class CacheKey:
    """One cached response: the method, what in its params changes the result (a ``resources/read``
    uri, ``""`` for the listings), and the partition (server, era, scope and principal)."""

    method: str
    params_key: str = ""
    partition: str = ""


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """A cached result, its scope and when it stops being fresh (epoch seconds; ``None``: never fresh)."""

    value: Any
    scope: Scope
    expires_at: float | None


class ResponseCacheStore(Protocol):
    """Where entries live. Called from any thread of a shared ``Client``; may raise (a miss)."""

    def get(self, key: CacheKey) -> CacheEntry | None: ...

    def set(self, key: CacheKey, entry: CacheEntry) -> None: ...

    def delete(self, key: CacheKey) -> None: ...

    def clear(self) -> None: ...


@dataclass(frozen=True, slots=True)
class CacheConfig:
    """How a ``Client`` caches: ``Client(url, cache=CacheConfig(...))``.

    ``store`` defaults to a per-client :class:`InMemoryResponseCacheStore`; a store of your own
    (shared between clients) needs a ``partition`` naming the authorization context, derived from
    a verified credential, never from request data. ``target_id`` names the server where no URL
    does (a transport object, an in-process server). ``default_ttl_ms`` applies to results with
    no ``ttlMs`` (``0``: not cached). ``share_public`` serves ``"public"`` entries across
    partitions, trusting the server's word that they are the same for everyone.
    """

    store: ResponseCacheStore | None = None
    partition: str = ""
    target_id: str | None = None
    default_ttl_ms: int = 0
    clock: Callable[[], float] = time.time
    share_public: bool = False

    def __post_init__(self) -> None:
        if self.store is not None and not self.partition:
            raise ValueError("a custom store requires an explicit partition")
        if self.target_id == "":
            raise ValueError("target_id must be a non-empty string or omitted")
        if self.default_ttl_ms < 0:
            raise ValueError(f"default_ttl_ms must be >= 0, got {self.default_ttl_ms}")


class InMemoryResponseCacheStore:
    """The default store: at most ``max_entries`` (``0``: no bound), least recently used evicted."""

    def __init__(self, *, max_entries: int = 1024) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self._max_entries = max_entries
        # Guards _entries, whose insertion order is the recency ledger.
        self._lock = threading.Lock()
        self._entries: dict[CacheKey, CacheEntry] = {}

    def get(self, key: CacheKey) -> CacheEntry | None:
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None:
                self._entries[key] = entry
            return entry

    def set(self, key: CacheKey, entry: CacheEntry) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = entry
            if self._max_entries and len(self._entries) > self._max_entries:
                del self._entries[next(iter(self._entries))]

    def delete(self, key: CacheKey) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def strip_userinfo(url: str) -> str:
    """``url`` without credentials in its authority, otherwise byte for byte (so distinct servers
    never merge): what names the server in the cache's keys."""
    start = url.find("//")
    if start == -1:
        return url
    start += 2
    end = min((found for found in (url.find(d, start) for d in "/?#") if found != -1), default=len(url))
    authority = url[start:end]
    return url if "@" not in authority else url[:start] + authority.rpartition("@")[2] + url[end:]


class ResponseCache:
    """Keys, the era gate, TTL and scope, and eviction, over one store for one client."""

    def __init__(self, config: CacheConfig, target: Any, version: Callable[[], str | None]) -> None:
        target_id = config.target_id or (strip_userinfo(target) if isinstance(target, str) else None)
        if target_id is None:
            if config.store is not None:
                raise ValueError("a custom cache store requires CacheConfig.target_id when the server is not a URL: "
                                 "another client could never be served this one's entries")
            target_id = uuid.uuid4().hex
        self._store = config.store if config.store is not None else InMemoryResponseCacheStore()
        self._config = config
        self._server = hashlib.sha256(target_id.encode()).hexdigest()
        self._version = version
        # Guards _generations ((method, params_key) -> evictions seen) and _warned (store
        # operations whose failure was already logged).
        self._lock = threading.Lock()
        self._generations: dict[tuple[str, str], int] = {}
        self._warned: set[str] = set()

    def _partition(self, scope: Scope) -> str:
        """A JSON list, so that no crafted value can run into the next field."""
        fields: list[str | None] = [scope, self._version(), self._server]
        if scope == "private" or not self._config.share_public:
            fields.append(self._config.partition)
        return json.dumps(fields)

    def _keys(self, method: str, params_key: str) -> tuple[CacheKey, CacheKey]:
        return (CacheKey(method, params_key, self._partition("private")),
                CacheKey(method, params_key, self._partition("public")))

    def read(self, method: str, params_key: str) -> Any | None:
        """A fresh entry's result (a copy the caller may change), or ``None``."""
        private, public = self._keys(method, params_key)
        try:
            entry = self._fresh(private)
            if entry is None:
                entry = self._fresh(public)
                if entry is not None and entry.scope != "public":
                    entry = None
            return None if entry is None else entry.value.model_copy(deep=True)
        except Exception:  # a store of the user's: any failure is a miss, never a failed call
            self._warn("get")
            return None

    def _fresh(self, key: CacheKey) -> CacheEntry | None:
        entry = self._store.get(key)
        if entry is None or entry.expires_at is None or entry.expires_at <= self._config.clock():
            return None
        return entry

    def capture(self, method: str, params_key: str) -> int:
        """Note a fetch about to start; :meth:`write` drops its result if the key was evicted meanwhile."""
        with self._lock:
            if (method, params_key) not in self._generations and len(self._generations) >= _GENERATION_CAP:
                del self._generations[next(iter(self._generations))]
            return self._generations.setdefault((method, params_key), 0)

    def write(self, method: str, params_key: str, result: Result, generation: int, mode: CacheMode) -> None:
        if self._moved(method, params_key, generation):
            return
        ttl_ms, scope = self._hints(result)
        private, public = self._keys(method, params_key)
        if ttl_ms <= 0:
            if mode == "refresh":
                self._delete(private, public)
            return
        own, other = (public, private) if scope == "public" else (private, public)
        if not self._delete(other):
            self._delete(own)
            return
        entry = CacheEntry(result.model_copy(deep=True), scope, self._config.clock() + ttl_ms / 1000)
        try:
            self._store.set(own, entry)
        except Exception:  # a store of the user's: nothing cached, the fetch itself succeeded
            self._warn("set")
            self._delete(own)
        if self._moved(method, params_key, generation):
            self._delete(own)

    def _moved(self, method: str, params_key: str, generation: int) -> bool:
        with self._lock:
            return self._generations.get((method, params_key), generation) != generation

    def _hints(self, result: Result) -> tuple[int, Scope]:
        """A legacy answer may carry the same keys; they count only on a 2026-07-28 connection."""
        modern = self._version() in MODERN_PROTOCOL_VERSIONS
        fields: set[str] = getattr(result, "model_fields_set", set())
        ttl_ms = getattr(result, "ttl_ms", None) if modern and "ttl_ms" in fields else None
        if ttl_ms is None:
            ttl_ms = self._config.default_ttl_ms
        scope: Scope = "public" if modern and getattr(result, "cache_scope", None) == "public" else "private"
        return min(ttl_ms, MAX_TTL_MS), scope

    def evict(self, method: str, params_key: str = "") -> None:
        with self._lock:
            if (method, params_key) in self._generations:
                self._generations[(method, params_key)] += 1
        self._delete(*self._keys(method, params_key))

    def evict_for(self, change: Any) -> None:
        """What a notification or a listen event makes stale: the methods whose row names it in
        ``evicted_by``; a method with a target (``resources/read``) only for the target it names."""
        method: str | None
        if is_server_event(change):
            method, target = event_method(change), getattr(change, "uri", None)
        else:
            method, target = getattr(change, "method", None), getattr(getattr(change, "params", None), "uri", None)
        for row in _STALE_AFTER.get(method, ()) if isinstance(method, str) else ():
            if row.target is None:
                self.evict(row.name)
            elif isinstance(target, str):
                self.evict(row.name, target)

    def _delete(self, *keys: CacheKey) -> bool:
        ok = True
        for key in keys:
            try:
                self._store.delete(key)
            except Exception:  # a store of the user's: the entry ages out by its TTL instead
                self._warn("delete")
                ok = False
        return ok

    def _warn(self, operation: str) -> None:
        with self._lock:
            if operation in self._warned:
                return
            self._warned.add(operation)
        logger.warning("Response cache store operation %r failed; continuing without the cache", operation,
                       exc_info=True)


__all__ = ["MAX_TTL_MS", "CacheConfig", "CacheEntry", "CacheKey", "CacheMode", "InMemoryResponseCacheStore",
           "ResponseCacheStore"]
