"""Cancelling client calls in flight: the threading side of ``anyio.CancelScope``.

An official client abandons a call by cancelling the scope that awaits it. Here a call blocks its
thread, so the scope is an object other code can reach: ``scope.cancel()``, from another thread or
from a callback of the call itself (a progress callback), ends every call the scope covers. Such a
call stops waiting, the server is told (``notifications/cancelled``, or over HTTP the closed
stream), and the call raises ``CallCancelled``, which the scope's own ``with`` block swallows,
setting ``cancelled_caught`` as anyio does::

    with CancelScope() as scope:
        client.call_tool("countdown", {"steps": 1000}, progress_callback=lambda *_: scope.cancel())
    assert scope.cancelled_caught

A scope covers the calls made on the thread that entered it, inside its block; scopes nest, and
cancelling an outer one cancels the calls of the inner ones, caught by the outer block. The session
carries on: later calls are unaffected.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

#: Each thread's entered scopes, outermost first.
_entered = threading.local()
#: Keys for the calls in flight under a scope (``next()`` on a count is atomic).
_keys = itertools.count()


class CallCancelled(concurrent.futures.CancelledError):
    """A client call ended because a ``CancelScope`` covering it was cancelled."""

    def __init__(self, scope: CancelScope) -> None:
        super().__init__("the call was cancelled by its CancelScope")
        self.scope = scope


class CancelScope:
    """Cancel the client calls made inside a ``with`` block, from any thread (see the module text)."""

    def __init__(self) -> None:
        # _lock guards _cancelled and _stops (how to stop each covered call now in flight).
        self._lock = threading.Lock()
        self._cancelled = False
        self._stops: dict[int, Callable[[], None]] = {}
        #: Whether this block swallowed the cancellation of a call it covered.
        self.cancelled_caught = False

    @property
    def cancel_called(self) -> bool:
        with self._lock:
            return self._cancelled

    def cancel(self) -> None:
        """Stop every covered call now in flight, and any made later inside the block; idempotent."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            stops = list(self._stops.values())
        for stop in stops:
            stop()

    def __enter__(self) -> CancelScope:
        _scopes().append(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        _scopes().remove(self)
        if isinstance(exc, CallCancelled) and exc.scope is self:
            self.cancelled_caught = True
            return True
        return False

    def _cover(self, key: int, stop: Callable[[], None]) -> bool:
        """Register a call in flight; ``False`` (not registered) when the scope is already cancelled."""
        with self._lock:
            if self._cancelled:
                return False
            self._stops[key] = stop
            return True

    def _uncover(self, key: int) -> None:
        with self._lock:
            self._stops.pop(key, None)


def _scopes() -> list[CancelScope]:
    scopes: list[CancelScope] | None = getattr(_entered, "scopes", None)
    if scopes is None:
        scopes = _entered.scopes = []
    return scopes


@contextmanager
def covered(stop: Callable[[], None]) -> Iterator[None]:
    """Run one call under the scopes this thread has entered: ``stop`` ends it when one is cancelled,
    and the block raises ``CallCancelled`` (naming the outermost cancelled scope) instead of however
    the stopped call failed, or right away when a scope was cancelled before the call began."""
    scopes = list(_scopes())
    if not scopes:
        yield
        return
    key = next(_keys)
    entered: list[CancelScope] = []
    try:
        for scope in scopes:
            if not scope._cover(key, stop):
                raise CallCancelled(scope)
            entered.append(scope)
        try:
            yield
        except Exception as failure:
            cancelled = _outermost_cancelled(scopes)
            if cancelled is not None:
                raise CallCancelled(cancelled) from failure
            raise
        cancelled = _outermost_cancelled(scopes)
        if cancelled is not None:  # the answer raced the cancellation: cancelled all the same, as anyio
            raise CallCancelled(cancelled)
    finally:
        for scope in entered:
            scope._uncover(key)


def _outermost_cancelled(scopes: list[CancelScope]) -> CancelScope | None:
    return next((scope for scope in scopes if scope.cancel_called), None)


__all__ = ["CallCancelled", "CancelScope"]
