"""What a proxy hears from its upstream without being asked: list changes and resource updates.

A legacy upstream pushes its list changes on any session (the pooled connections' included) and a
resource's updates on the connection that subscribed to it (``Upstream.subscribe``). A 2026-07-28
upstream tells only a ``subscriptions/listen``, so the proxy keeps one open (:class:`UpstreamListen`)
from the first time it needs one: a client listed what the upstream offers (the proxy's cached
listing must hear that it changed, and its clients with it), listened, or subscribed to a resource.
It asks for every list change and for the resources its clients subscribed to; a new subscription
reopens it with the new set. What arrives on it reaches the proxy as any upstream notification
(the connection's ``on_notification``).

One thread per upstream holds the listen (``minimcp-proxy-listen``): a lost stream or an upstream
that is down is tried again after ``RETRY`` seconds (longer while it stays down), and since nothing
is replayed, every reopening is announced (``on_open``) so the proxy reads its listings again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from minimcp.client.era import ListenNotSupportedError
from minimcp.server.app.proxy.upstream import Reach, UpstreamConnection

if TYPE_CHECKING:
    from minimcp.server.app.proxy.upstream import Upstream

logger = logging.getLogger("minimcp.server.proxy")

#: Seconds before a listen that could not be opened, or was lost, is opened again; doubled while
#: the attempts keep failing, up to ``MAX_RETRY``.
RETRY = 1.0
MAX_RETRY = 30.0
#: Seconds the listen thread waits for an event before it looks whether it must reopen or stop.
POLL = 0.2
#: Resource URIs one upstream listen asks for at most (the subscriptions of all the proxy's clients).
MAX_URIS = 1024


class UpstreamListen:
    """The one ``subscriptions/listen`` a proxy keeps open to a 2026-07-28 upstream."""

    def __init__(self, upstream: Upstream, on_open: Callable[[], None]) -> None:
        self.upstream = upstream
        self.on_open = on_open
        # _lock guards _uris, _honored (the URIs of the listen open now), _legacy (None: not known
        # yet), _thread and _closed; _cond (on _lock) wakes those waiting for an open or a refusal.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._uris: set[str] = set()
        self._honored: frozenset[str] | None = None
        self._legacy: bool | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        #: Set when the listen must be reopened (a new URI) or closed.
        self._changed = threading.Event()

    def start(self) -> bool:
        """Have the listen open, waiting (at most the upstream's ``connect_timeout``) for the first
        attempt; ``False`` when the upstream is legacy (it pushes without a listen), or reached
        with each user's own credential (the proxy has none to listen with: its listings expire)."""
        if self.upstream.own_reach() is None:
            return False
        with self._lock:
            if self._legacy is not None or self._closed:
                return not self._legacy
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="minimcp-proxy-listen", daemon=True)
                self._thread.start()
            self._cond.wait_for(lambda: self._legacy is not None or self._honored is not None or self._closed,
                                self.upstream.spec.connect_timeout)
            return not self._legacy

    def want(self, uri: str) -> bool:
        """Ask for ``uri``'s updates, waiting (bounded as ``start``) until the listen asks for it;
        ``False`` when the upstream is legacy (subscribe on it instead)."""
        if not self.start():
            return False
        with self._lock:
            if uri in self._uris or len(self._uris) >= MAX_URIS:
                if len(self._uris) >= MAX_URIS:
                    logger.warning("upstream %r: %d resource subscriptions already; %s is not asked for",
                                   self.upstream.name, MAX_URIS, uri)
                return True
            self._uris.add(uri)
            self._changed.set()
            self._cond.wait_for(lambda: (self._honored is not None and uri in self._honored) or self._closed,
                                self.upstream.spec.connect_timeout)
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        self._changed.set()
        if thread is not None:
            thread.join(self.upstream.spec.connect_timeout)

    # --- the thread ----------------------------------------------------------------------------------
    def _stopped(self) -> bool:
        with self._lock:
            return self._closed

    def _settle(self, honored: frozenset[str] | None = None, legacy: bool | None = None) -> None:
        with self._lock:
            self._honored = honored
            if legacy is not None:
                self._legacy = legacy
            self._cond.notify_all()

    def _run(self) -> None:
        delay = RETRY
        while not self._stopped():
            connection: UpstreamConnection | None = None
            try:
                connection = UpstreamConnection(self.upstream, self.upstream.own_reach() or Reach())
                connection.open()
                delay = RETRY
                self._hold(connection)
            except ListenNotSupportedError:
                self._settle(legacy=True)
                return
            except Exception as failed:  # down, lost, refused: the next attempt says it again if it lasts
                logger.info("listening to upstream %r failed, trying again in %g s: %s", self.upstream.name,
                            delay, failed)
                self._settle(frozenset())
            finally:
                if connection is not None:
                    connection.close()
            with self._lock:
                if not self._closed:  # a want() made while down wakes the wait; only a new one does
                    self._changed.clear()
            self._changed.wait(delay)
            delay = min(delay * 2, MAX_RETRY)

    def _hold(self, connection: UpstreamConnection) -> None:
        """Keep a listen open on ``connection``, reopening it with the URIs wanted, until closed."""
        client = connection.client
        while not self._stopped():
            with self._lock:
                uris = sorted(self._uris)
            self._changed.clear()
            with client.listen(tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True,
                               resource_subscriptions=uris) as events:
                self._settle(frozenset(uris), legacy=False)
                self.on_open()
                while not self._changed.is_set():
                    try:
                        events.next(timeout=POLL)  # the event itself reaches the proxy as a notification
                    except TimeoutError:
                        continue
                    except StopIteration:  # the upstream ended it gracefully: open another
                        break
