"""The outboxes one connection's messages leave by: each call in flight, and the standalone channel.

A call's own messages (its progress, its questions, its answer) ride its outbox, found by the
request id the client gave it (``notifications/cancelled`` names it too). Messages tied to no call
of a legacy session ride its standalone channel: the HTTP GET stream, or the stdio and in-memory
stream itself.
"""

from __future__ import annotations

from minimcp.server.core.outbox import Outbox
from minimcp.server.core.workers import Lock
from minimcp.types import RequestId

__all__ = ["Channels"]


class Channels:
    """The calls in flight of one connection by request id, and its standalone channel."""

    def __init__(self) -> None:
        # _lock guards _calls and _standalone.
        self._lock = Lock()
        self._calls: dict[RequestId, Outbox] = {}
        self._standalone: Outbox | None = None

    def begin(self, request_id: RequestId, outbox: Outbox) -> None:
        with self._lock:
            self._calls[request_id] = outbox

    def end(self, request_id: RequestId, outbox: Outbox) -> None:
        """Forget the call ``request_id`` while ``outbox`` is still its outbox: a client may reuse an
        id once its call was cancelled, before the old call's worker has wound down."""
        with self._lock:
            if self._calls.get(request_id) is outbox:
                del self._calls[request_id]

    def __len__(self) -> int:
        """How many calls are in flight."""
        return len(self._calls)

    def outbox(self, related_request_id: RequestId | None) -> Outbox | None:
        """The outbox of the call ``related_request_id``, or the standalone channel for ``None``."""
        with self._lock:
            if related_request_id is not None:
                return self._calls.get(related_request_id)
            return self._standalone

    @property
    def standalone(self) -> Outbox | None:
        return self._standalone

    def attach(self, outbox: Outbox) -> bool:
        """Make ``outbox`` the standalone channel, unless one is already open."""
        with self._lock:
            if self._standalone is not None:
                return False
            self._standalone = outbox
            return True

    def detach(self, outbox: Outbox) -> bool:
        """Forget ``outbox`` as the standalone channel; whether it still was the one."""
        with self._lock:
            if self._standalone is not outbox:
                return False
            self._standalone = None
            return True

    @property
    def open(self) -> bool:
        """Whether a call or the standalone channel is open."""
        with self._lock:
            return bool(self._calls) or self._standalone is not None

    def every(self) -> list[Outbox]:
        """Every outbox open now: the calls' and the standalone channel."""
        with self._lock:
            return [*self._calls.values(), *([self._standalone] if self._standalone else [])]
