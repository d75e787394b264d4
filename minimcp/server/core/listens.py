"""``subscriptions/listen`` (2026-07-28): long-lived notification streams and what reaches them.

A 2026-07-28 server has no session and no standalone stream, so a client that wants to hear about
changes opens a listen: one request whose response never completes on its own. The first message
on it acknowledges the subscription with the subset of notification types the server honours;
afterwards every change published goes to each open listen that opted in, tagged with the listen's
request id as ``subscriptionId``. Changes arrive as typed events from the buses a ``Listens``
follows (``minimcp.server.app.subscriptions``: ``ctx.notify_tools_changed()`` publishes on the
``MCPServer``'s bus, a low-level server's handlers on the bus its ``ListenHandler`` serves), so a
bus spanning several processes reaches the listens of every one.

This file knows nothing of HTTP or stdio: a listen is an ``Outbox`` the transport drains. The
client ends a listen by going away (the transport aborts its outbox) and the server ends all of
them on shutdown with a final ``complete`` result.

Legacy connections hear on their standalone channel (the GET stream, the stdio pipe), untagged,
the resource updates published for the URIs they subscribed to, and the server's own changes
(``announce``: ``MCPServer.enable``/``disable``). A list change a handler publishes is the listens'
only, as officially: a legacy client hears one when the handler tells its session
(``ctx.session.send_tool_list_changed()``), so an official program that does both sends it once.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.shares import Shares, fair_share
from minimcp.server.core.workers import Lock
from minimcp.shared.subscriptions import ResourceUpdated, ServerEvent, event_method
from minimcp.types import INTERNAL_ERROR, META_SUBSCRIPTION_ID, RequestId, SubscriptionFilter

RESOURCE_UPDATED = "notifications/resources/updated"

#: Notification type -> the filter key listing the subjects a listen wants it for.
SUBJECTS = {"notifications/resources/updated": "resourceSubscriptions", "notifications/tasks": "taskIds"}


class LegacyChannel(Protocol):
    """A legacy connection whose standalone channel is open (``Connection``): the URIs it subscribed
    to, and the way to send it a notification."""

    @property
    def subscriptions(self) -> Collection[str]: ...

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None: ...


class EventSource(Protocol):
    """What a ``Listens`` follows: the ``subscribe`` half of a ``SubscriptionBus``."""

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Call ``listener`` with every event published from now on; returns the way to stop."""

#: Notification type -> (the filter key a listen opts in with, the capability that must be declared).
LIST_CHANGED = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


def honoured(requested: SubscriptionFilter) -> dict[str, Any]:
    """The filter a listen is acknowledged with, in wire form: every kind it asked for.

    Whether an event of a kind ever fires depends on what the server publishes, just as a
    subscription to a URI nothing updates is honoured and stays silent (the official rule); flags
    not set and an empty URI list are left out rather than echoed as false.
    """
    wanted = {
        "toolsListChanged": requested.tools_list_changed,
        "promptsListChanged": requested.prompts_list_changed,
        "resourcesListChanged": requested.resources_list_changed,
    }
    result: dict[str, Any] = {key: True for key, on in wanted.items() if on}
    if requested.resource_subscriptions:
        result["resourceSubscriptions"] = list(requested.resource_subscriptions)
    return result


class Listen:
    """One open ``subscriptions/listen``: its id, what it receives, and where it goes."""

    def __init__(self, listen_id: RequestId, notifications: dict[str, Any], outbox: Outbox,
                 max_backlog: int) -> None:
        self.id = listen_id
        self.notifications = notifications
        self.outbox = outbox
        self.max_backlog = max_backlog

    def send(self, method: str, params: dict[str, Any] | None) -> None:
        """Queue one notification; a stream whose client stopped reading ends at ``max_backlog``
        queued messages instead of growing (the client listens again and reads again)."""
        if self.outbox.backlog >= self.max_backlog:
            self.outbox.abort()
            return
        self.outbox.send(self.tagged(method, params))

    @property
    def open(self) -> bool:
        return not self.outbox.cancelled.is_set() and not self.outbox.done

    def wants(self, method: str, uri: str | None) -> bool:
        """Whether this listen opted in to ``method`` (about ``uri``: a resource URI, or a task id)."""
        subjects = SUBJECTS.get(method)
        if subjects is not None:
            return uri in self.notifications.get(subjects, ())
        key = LIST_CHANGED.get(method)
        return key is not None and bool(self.notifications.get(key))

    def tagged(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A notification for this listen, carrying its ``subscriptionId``."""
        return jsonrpc.notification(method, {**(params or {}), "_meta": {META_SUBSCRIPTION_ID: self.id}})


class ListenSource(ABC):
    """A ``subscriptions/listen`` handler fed by a bus (``minimcp.server.app.subscriptions.ListenHandler``):
    ``Server`` binds it to its ``Listens`` when it is registered, so its bus's resource updates reach
    subscribed legacy channels before any listen opens."""

    @abstractmethod
    def bind(self, listens: Listens) -> None:
        """Feed ``listens`` (one server's open streams and legacy channels) from this source's bus."""


class Listens:
    """The open listens and standalone channels of one server, shared by every transport and thread."""

    def __init__(self, max_open: int = 1024, max_backlog: int = 1024, max_per_principal: int | None = None) -> None:
        self.max_open = max_open
        self.max_backlog = max_backlog
        #: The listens one principal may hold open (``core/shares.py``; default a sixteenth of
        #: ``max_open``: a client needs one or two, and sixteen principals at their full share still
        #: leave the server's bound to reach).
        self.shares = Shares(fair_share(max_open, 16) if max_per_principal is None else max_per_principal,
                             "Too many open subscriptions for this caller (limit {limit}); close one first")
        # _lock guards _open, _legacy and _followed.
        self._lock = Lock()
        self._open: list[Listen] = []
        self._legacy: set[LegacyChannel] = set()
        self._followed: list[EventSource] = []

    def follow(self, bus: EventSource) -> None:
        """Deliver every event published on ``bus`` from now on; following a bus twice is once.

        The subscription lasts as long as the bus: a server closed at the end of one serving loop
        may serve again.
        """
        with self._lock:
            if any(followed is bus for followed in self._followed):
                return
            self._followed.append(bus)
        bus.subscribe(self.deliver)

    def deliver(self, event: ServerEvent) -> None:
        """One event from a followed bus, to the listens that want it (and a resource update to the
        legacy connections subscribed to its URI)."""
        uri = event.uri if isinstance(event, ResourceUpdated) else None
        self.publish(event_method(event), {"uri": uri} if uri is not None else None, uri=uri)

    def attach(self, connection: LegacyChannel) -> None:
        """A legacy connection opened its standalone channel: from now on it hears the resource
        updates it subscribed to and what the server announces."""
        with self._lock:
            self._legacy.add(connection)

    def detach(self, connection: LegacyChannel) -> None:
        with self._lock:
            self._legacy.discard(connection)

    def open(self, listen_id: RequestId, requested: SubscriptionFilter, outbox: Outbox,
             extra: dict[str, Any] | None = None, limit: int | None = None, max_backlog: int | None = None,
             principal: str | None = None) -> Listen:
        """Acknowledge a listen on ``outbox`` and start delivering to it.

        The acknowledgement is queued before the listen is registered, so no notification can
        precede it on the stream. ``principal`` (``shares.principal_of`` the request) may hold at
        most its share of listens, counted until the stream ends; ``limit`` (default ``max_open``)
        is a soft bound on the listens open at once (checked, then registered); ``max_backlog``
        (default ``max_backlog``) bounds what may wait unread on the stream. ``extra`` holds filter
        entries an extension honours (the tasks extension's ``taskIds``).
        """
        listen = Listen(listen_id, {**honoured(requested), **(extra or {})}, outbox,
                        self.max_backlog if max_backlog is None else max_backlog)
        self.shares.take(principal)
        with self._lock:
            self._open = [kept for kept in self._open if kept.open]
            full = len(self._open) >= (self.max_open if limit is None else limit)
        if full:
            self.shares.give_back(principal)
            raise MCPError(INTERNAL_ERROR, "Too many open subscriptions; try again later")
        outbox.on_end(functools.partial(self.shares.give_back, principal))
        outbox.send(listen.tagged("notifications/subscriptions/acknowledged", {"notifications": listen.notifications}))
        with self._lock:
            self._open.append(listen)
        return listen

    def publish(self, method: str, params: dict[str, Any] | None = None, uri: str | None = None) -> None:
        """Send ``method`` to every open listen that opted in to it, and a resource update to the
        legacy connections subscribed to ``uri``; a no-op with no listener."""
        with self._lock:
            self._open = [kept for kept in self._open if kept.open]
            targets = [listen for listen in self._open if listen.wants(method, uri)]
            connections = list(self._legacy) if method == RESOURCE_UPDATED else []
        for listen in targets:
            listen.send(method, params)
        for connection in connections:
            if uri in connection.subscriptions:
                connection.notify(method, params)

    def announce(self, method: str) -> None:
        """Send ``method`` to every legacy connection's standalone channel: a change the server made
        itself (``MCPServer.enable``/``disable``), which no handler's session is there to tell."""
        with self._lock:
            connections = list(self._legacy)
        for connection in connections:
            connection.notify(method, None)

    def close(self) -> None:
        """End every listen gracefully: a final ``complete`` result naming its subscription.

        The buses stay followed: a server closed at the end of one serving loop may serve again.
        """
        with self._lock:
            listens, self._open = self._open, []
        for listen in listens:
            listen.outbox.close(jsonrpc.result(listen.id, {
                "resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: listen.id}}))

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for listen in self._open if listen.open)
