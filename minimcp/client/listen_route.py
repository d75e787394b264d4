"""Where the session hands the frames of one open ``subscriptions/listen`` stream.

The session's reader thread gives each frame tagged with a listen's id to that listen's
``ListenRoute``; the thread iterating the ``Subscription`` (``minimcp.client.subscriptions``) waits
on the same route. The session knows only this half, so it does not depend on ``listen()``, which
drives a session.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ValidationError

from minimcp.jsonrpc import MCPError
from minimcp.shared.subscriptions import ResourceUpdated, ServerEvent, event_from_wire, event_matches
from minimcp.types import INTERNAL_ERROR, SubscriptionFilter

#: Distinct events a consumer may leave unread before the subscription counts as lost: equal
#: events merge, but distinct resource URIs are unbounded.
MAX_PENDING_EVENTS = 1024

_End = Literal["graceful", "lost", "local"]


class ListenRoute:
    """What one open listen has received, shared by the thread that receives its frames and the
    thread that iterates.

    ``_cond`` guards ``honored``, ``end``, ``error``, ``_uris`` and ``_pending`` (received events
    not yet consumed, in order, equal ones merged).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.honored: SubscriptionFilter | None = None
        self.end: _End | None = None
        self.error: MCPError | None = None
        self._uris: frozenset[str] = frozenset()
        self._pending: dict[ServerEvent, None] = {}

    def receive(self, method: str, params: Mapping[str, Any]) -> bool:
        """Take one frame tagged with this listen's id; ``True`` when it is consumed here (the
        acknowledgement), ``False`` when it also goes on to the session's ``message_handler``."""
        if method == "notifications/subscriptions/acknowledged":
            try:
                honored = SubscriptionFilter.model_validate(params.get("notifications"))
            except ValidationError:
                return False
            self.set_acked(honored)
            return True
        event = event_from_wire(method, params)
        if event is not None:
            self.deliver(event)
        return False

    def set_acked(self, honored: SubscriptionFilter) -> None:
        """Record the acknowledged filter; the first acknowledgement counts."""
        with self._cond:
            if self.honored is None:
                self.honored = honored
                self._uris = frozenset(honored.resource_subscriptions or ())
                self._cond.notify_all()

    def deliver(self, event: ServerEvent) -> None:
        """Queue an event inside the acknowledged filter; an equal one already waiting absorbs it.

        Any ``ResourceUpdated`` counts once URIs were honoured at all: the spec lets the server
        name a sub-resource of a subscribed URI.
        """
        with self._cond:
            if self.end is not None or self.honored is None or event in self._pending:
                return
            admitted = bool(self._uris) if isinstance(event, ResourceUpdated) else event_matches(
                self.honored, self._uris, event)
            if not admitted:
                return
            if len(self._pending) >= MAX_PENDING_EVENTS:
                self._settle("lost", MCPError(INTERNAL_ERROR, f"more than {MAX_PENDING_EVENTS} events were left "
                                              "unread; listen again and read again"))
                return
            self._pending[event] = None
            self._cond.notify_all()

    def settle(self, end: _End, error: MCPError | None = None) -> None:
        """Record how the stream ended; the first ending counts and wakes every waiter."""
        with self._cond:
            self._settle(end, error)

    def _settle(self, end: _End, error: MCPError | None) -> None:
        if self.end is None:
            self.end, self.error = end, error
            self._cond.notify_all()

    def wait_acked(self, timeout: float) -> bool:
        """Wait for the acknowledgement or an ending; ``False`` when ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self.honored is not None or self.end is not None, timeout)

    def next_event(self, timeout: float | None = None) -> ServerEvent | _End | None:
        """The oldest unconsumed event, or how the stream ended once none is left; ``None`` when
        ``timeout`` passed first.

        Without a timeout the wait lasts as long as the stream: every ending settles the route and
        wakes it. Leaving the block ends at once; the other endings let the consumer read what
        arrived before them.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._pending) or self.end is not None, timeout):
                return None
            if self.end == "local" or not self._pending:
                assert self.end is not None
                return self.end
            return next(iter(self._pending))

    def consume(self, event: ServerEvent) -> None:
        with self._cond:
            self._pending.pop(event, None)
