"""Notification bindings: a client extension's handler for vendor notifications, and the
observer that runs it beside the session's reader thread.

A ``ClientExtension`` contributes bindings (``minimcp.client.extension``); the session routes each
notification the protocol does not define to its binding's ``BindingObserver``.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

logger = logging.getLogger("minimcp.client")

NotifyParamsT = TypeVar("NotifyParamsT", bound=BaseModel)

#: Notifications of one binding that wait for its handler; past this the oldest is dropped.
NOTIFICATION_QUEUE_SIZE = 256

#: How long an observer's thread waits for the next notification before it ends (a later one
#: starts it again), so an idle connection keeps no thread per binding.
OBSERVER_IDLE_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class NotificationBinding(Generic[NotifyParamsT]):
    """Hand the server's ``method`` notifications (a method the protocol does not define) to
    ``handler(params)``, ``params`` validated as ``params_type``. The handler only observes: it runs
    on a thread of its own, one notification at a time in the order they came, so it may use the
    session; notifications that pile up beyond a bound lose the oldest, with a warning."""

    method: str
    params_type: type[NotifyParamsT]
    handler: Callable[[NotifyParamsT], None]


class BindingObserver:
    """One binding at work: validates what arrives and runs the handler on a thread of its own,
    since the reader thread that delivers a notification must stay free to deliver the answers a
    handler using the session waits for."""

    def __init__(self, binding: NotificationBinding[Any]) -> None:
        self.binding = binding
        # _ready's lock guards _queue, _thread and _closed; _ready wakes the thread for new work.
        self._ready = threading.Condition()
        self._queue: collections.deque[BaseModel] = collections.deque(maxlen=NOTIFICATION_QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._closed = False

    def receive(self, params: Any) -> None:
        """Queue one notification's params (called by the reader thread; never blocks on the handler)."""
        method = self.binding.method
        try:
            model = self.binding.params_type.model_validate(params or {})
        except ValidationError:
            logger.warning("Failed to validate notification: %s", method, exc_info=True)
            return
        with self._ready:
            if self._closed:
                return
            if len(self._queue) == NOTIFICATION_QUEUE_SIZE:
                logger.warning("notification queue for %r is full; dropped the oldest event", method)
            self._queue.append(model)  # a full deque drops its oldest
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"minimcp-binding {method}", daemon=True)
                self._thread.start()
            self._ready.notify()

    def close(self) -> None:
        """Stop observing; what is still queued is dropped, a handler running now finishes."""
        with self._ready:
            self._closed = True
            self._queue.clear()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._queue or self._closed, timeout=OBSERVER_IDLE_SECONDS)
                if self._closed or not self._queue:
                    self._thread = None  # idle or closed: the next notification starts a new thread
                    return
                params = self._queue.popleft()
            try:
                self.binding.handler(params)
            except Exception:
                logger.exception("notification binding handler for %r raised", self.binding.method)
