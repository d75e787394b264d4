"""Publishing changes to ``subscriptions/listen`` streams (2026-07-28): the bus and the handler.

- ``SubscriptionBus`` (a port of the core, ``minimcp.server.core.ports``) is the seam between code
  that announces a change and the open streams. It carries typed events (``ToolsListChanged``,
  ``ResourceUpdated(uri)``, ...), never JSON-RPC, so a bus backed by an external pub/sub (Redis,
  NATS) can fan events out to every process of a deployment: ``publish`` sends to the backend, and
  each process's bus calls its local listeners when an event arrives from it.
  ``InMemorySubscriptionBus`` (``minimcp.server.core.in_process``) is the one-process default.
- ``ListenHandler(bus)`` serves ``subscriptions/listen`` on a low-level ``Server``
  (``on_subscriptions_listen=ListenHandler(bus)``); ``MCPServer`` serves it on its own bus unless
  built with ``subscriptions=False``.

The streams themselves (acknowledgement first, the ``subscriptionId`` on every frame, only the
kinds a client asked for, a graceful ``complete`` at shutdown) live in
``minimcp.server.core.listens``, which every transport drains. A legacy client hears a
``ResourceUpdated`` for a URI it subscribed to on its standalone channel; list changes are the
listens' only, as officially (a handler tells a legacy client with ``ctx.session.send_*_list_changed()``).
Nothing is replayed: a client whose stream dropped listens again and reads again.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from minimcp.jsonrpc import MCPError
from minimcp.server.core.listens import Listens, ListenSource
from minimcp.server.core.ports import SubscriptionBus
from minimcp.server.core.shares import principal_of
from minimcp.types import INVALID_REQUEST, SubscriptionsListenRequestParams

if TYPE_CHECKING:
    from minimcp.server.core.context import ServerRequestContext

__all__ = ["ListenHandler"]


class ListenHandler(ListenSource):
    """Serves ``subscriptions/listen``: each call opens one stream fed by ``bus``.

    Pass it as ``Server(on_subscriptions_listen=ListenHandler(bus))``. A call returns at once: the
    stream stays open on the request's response (the SSE body, the stdio pipe) without holding a
    worker thread, until the client goes away or ``close()`` ends it gracefully.
    ``max_subscriptions`` bounds the streams open at once on one server; a listen beyond it is
    refused before its acknowledgement. ``max_buffered_events`` bounds what waits unread on one
    stream: a stream whose client stopped reading is ended there (nothing is replayed anyway, so
    ending it loses nothing a growing backlog would not).
    """

    def __init__(self, bus: SubscriptionBus, *, max_subscriptions: int = 1024, max_buffered_events: int = 1024) -> None:
        self.bus = bus
        self.max_subscriptions = max_subscriptions
        self.max_buffered_events = max_buffered_events
        # _lock guards _served: the stream registries of the servers this handler opened listens on.
        self._lock = threading.Lock()
        self._served: weakref.WeakSet[Listens] = weakref.WeakSet()

    def bind(self, listens: Listens) -> None:
        """Feed ``listens`` (one server's open streams and legacy channels) from this handler's bus."""
        listens.follow(self.bus)
        with self._lock:
            self._served.add(listens)

    def __call__(self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> None:
        if ctx.request_id is None or ctx.outbox is None or ctx.server is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen needs a request id and a stream to answer on")
        listens = ctx.server.dispatcher.listens
        self.bind(listens)
        listens.open(ctx.request_id, params.notifications, ctx.outbox, limit=self.max_subscriptions,
                     max_backlog=self.max_buffered_events, principal=principal_of(ctx.transport, ctx.session.connection))

    def close(self) -> None:
        """End every stream this handler opened with the graceful final result; listening clients
        see their loop end (not a lost subscription)."""
        with self._lock:
            served = list(self._served)
        for listens in served:
            listens.close()

