"""Client extensions (SEP-2133): what a client declares under ``capabilities.extensions``, and the
vendor notifications it listens to.

    with Client(server, extensions=[advertise("com.example/catalog")]) as client:
        ...

A server gates an extension's methods on that declaration (``require_client_extension``), so a
client that speaks one says so here. ``advertise(identifier, settings)`` declares support and
nothing else; subclass ``ClientExtension`` when the settings are computed or when the extension
observes notifications of its own (``notifications()`` -> ``NotificationBinding``).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from minimcp.shared.extension import validate_extension_identifier

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


class ClientExtension:
    """Base class of a client extension: set ``identifier``, override what it contributes."""

    #: The reverse-DNS identifier (``vendor-prefix/name``), the key under ``capabilities.extensions``.
    identifier: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        identifier = cls.__dict__.get("identifier")
        if identifier is not None:  # one assigned per instance is checked when a Client takes it
            validate_extension_identifier(identifier, owner=cls.__name__)

    def settings(self) -> dict[str, Any]:
        """What is declared at ``capabilities.extensions[identifier]``, read once by ``Client``."""
        return {}

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        """The server notifications this extension observes."""
        return ()


class _Advertised(ClientExtension):
    def __init__(self, identifier: str, settings: dict[str, Any]) -> None:
        self.identifier = identifier
        self._settings = settings

    def settings(self) -> dict[str, Any]:
        return self._settings


def advertise(identifier: str, settings: dict[str, Any] | None = None) -> ClientExtension:
    """Declare support for ``identifier`` (with its ``settings``) and nothing more: declare only
    what your code really speaks, since the server will rely on it."""
    validate_extension_identifier(identifier, owner="advertise")
    return _Advertised(identifier, {} if settings is None else settings)


def fold_extensions(extensions: Sequence[ClientExtension] | None,
                    ) -> tuple[dict[str, dict[str, Any]], list[NotificationBinding[Any]]]:
    """``Client(extensions=[...])`` as what the session takes: the ``capabilities.extensions`` map
    it declares and the notification bindings, each method observed by one extension only."""
    if isinstance(extensions, Mapping):
        raise TypeError("extensions= takes a sequence of ClientExtension instances; "
                        "declare an identifier with advertise(identifier, settings)")
    declared: dict[str, dict[str, Any]] = {}
    owners: dict[str, str] = {}
    bindings: list[NotificationBinding[Any]] = []
    for extension in extensions or ():
        identifier = getattr(extension, "identifier", None)
        validate_extension_identifier(identifier, owner=type(extension).__name__)
        if identifier in declared:
            raise ValueError(f"extension identifier {identifier!r} is passed more than once")
        declared[identifier] = extension.settings()
        for binding in extension.notifications():
            owner = owners.get(binding.method)
            if owner is not None:
                who = f"extension {owner!r} binds" if owner == identifier else \
                    f"extensions {owner!r} and {identifier!r} both bind"
                raise ValueError(f"{who} notification method {binding.method!r}; a method can have only one observer")
            owners[binding.method] = identifier
            bindings.append(binding)
    return declared, bindings


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


__all__ = ["ClientExtension", "NotificationBinding", "advertise"]
