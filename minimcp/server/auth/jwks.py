"""A JSON Web Key Set fetched from an authorization server and kept, for checking token signatures.

The set is fetched on first use and again when it is older than ``max_age``, or when a token names a
key (``kid``) the set lacks, which is how a key rotation reaches us. Refetches are rate-limited: at
most one every ``min_refresh_interval`` seconds whatever tokens arrive, so a flood of tokens with
made-up ``kid`` values cannot turn this server into a load generator against the key server, and
while the key server is down each request fails at once instead of waiting on it again. One thread
fetches at a time; the others keep using the set they have, or, with none yet, wait for that fetch
no longer than its timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import requests

from minimcp.server.auth.fetch import FetchError, fetch_json
from minimcp.server.auth.provider import InvalidTokenError

logger = logging.getLogger("minimcp.server.auth")

UNAVAILABLE = "The authorization server's signing keys are unavailable; try again later"


class JWKSCache:
    def __init__(self, url: str, *, session: requests.Session | None = None, timeout: float = 5.0,
                 max_age: float = 3600.0, min_refresh_interval: float = 30.0) -> None:
        self.url = url
        self.session = session or requests.Session()
        self.timeout = timeout
        self.max_age = max_age
        self.min_refresh_interval = min_refresh_interval
        # _lock guards _keys (kid -> JWK dict), _fetched_at (time of the last good fetch) and
        # _attempted_at (time of the last fetch, good or not), all monotonic.
        self._lock = threading.Lock()
        # _fetching is held by the one thread fetching; never taken while holding _lock.
        self._fetching = threading.Lock()
        self._keys: dict[str | None, dict[str, Any]] | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None

    def key(self, kid: str | None) -> dict[str, Any]:
        """The JWK a token names by ``kid`` (the only key, when the token names none)."""
        with self._lock:
            keys, fresh, may_fetch = self._keys, self._fresh(), self._may_fetch()
        found = None if keys is None else _pick(keys, kid)
        if found is not None and fresh:
            return found
        if may_fetch or keys is None:
            keys = self._refresh() or keys
        if keys is None:
            raise InvalidTokenError(UNAVAILABLE)
        found = _pick(keys, kid)
        if found is None:
            raise InvalidTokenError("Token signed with an unknown key")
        return found

    def _fresh(self) -> bool:
        return self._keys is not None and time.monotonic() - self._fetched_at < self.max_age

    def _may_fetch(self) -> bool:
        return self._attempted_at is None or time.monotonic() - self._attempted_at >= self.min_refresh_interval

    def _refresh(self) -> dict[str | None, dict[str, Any]] | None:
        """Fetch the set if no other thread is and the rate limit allows; the newest set either way."""
        if not self._fetching.acquire(timeout=self.timeout):
            with self._lock:
                return self._keys
        try:
            with self._lock:
                if not self._may_fetch():  # another thread fetched while this one waited
                    return self._keys
                self._attempted_at = time.monotonic()
            try:
                keys = _parse(fetch_json(self.session, "GET", self.url, timeout=self.timeout))
            except FetchError as exc:
                logger.warning("JWKS fetch failed: %s", exc)
                with self._lock:
                    return self._keys
            with self._lock:
                self._keys, self._fetched_at = keys, time.monotonic()
                return keys
        finally:
            self._fetching.release()


def _pick(keys: dict[str | None, dict[str, Any]], kid: str | None) -> dict[str, Any] | None:
    if kid is not None:
        return keys.get(kid)
    return next(iter(keys.values())) if len(keys) == 1 else None


def _parse(document: Any) -> dict[str | None, dict[str, Any]]:
    """The signing keys of a JWKS document by ``kid``; a document that is not one is a ``FetchError``."""
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise FetchError("the JWKS document has no 'keys' list")
    keys: dict[str | None, dict[str, Any]] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("kty"), str) and entry.get("use", "sig") == "sig":
            kid = entry.get("kid")
            keys[kid if isinstance(kid, str) else None] = entry
    if not keys:
        raise FetchError("the JWKS document holds no signing keys")
    return keys
