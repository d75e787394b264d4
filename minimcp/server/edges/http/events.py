"""Resumable SSE streams kept in your own storage: ``EventStore`` (exported at the official path,
``minimcp.server.streamable_http``).

minimcp makes the SSE answers of legacy sessions (2025-11-25 and later) resumable on its own: every
event gets an id, and a client that reconnects with ``Last-Event-ID`` gets what it missed from an
in-process log (``minimcp.server.core.outbox.EventLog``). Pass ``event_store=`` to
``streamable_http_app()`` / ``wsgi_app()`` / ``run(transport="streamable-http", ...)`` and the ids
are the store's, every event is stored there as it is sent (whether or not a client is connected),
and a reconnection is answered from the store first, then from the live log while the request still
runs. A store kept outside the process (a database) can replay what another process sent.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from minimcp.jsonrpc import Message
from minimcp.server.core.outbox import EventLog
from minimcp.types.jsonrpc import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

logger = logging.getLogger("minimcp.server")

StreamId = str
EventId = str


@dataclass
class EventMessage:
    """A message and the id of the event that carried it."""

    message: JSONRPCMessage
    event_id: str | None = None


EventCallback = Callable[[EventMessage], None]


class EventStore(ABC):
    """Where a server keeps the events of its SSE streams, for clients that reconnect."""

    @abstractmethod
    def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Keep one event of ``stream_id`` and return its id; ``message`` is ``None`` for an event
        with no data (the one that opens a stream, or the one before the server closes it)."""

    @abstractmethod
    def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Call ``send_callback`` with every event of the stream ``last_event_id`` belongs to that
        came after it, in order; return that stream's id, or ``None`` when the id is unknown."""


def to_model(message: Message) -> JSONRPCMessage:
    """A wire message as the typed envelope a store receives."""
    if "method" in message:
        return (JSONRPCRequest if "id" in message else JSONRPCNotification).model_validate(message)
    return (JSONRPCError if "error" in message else JSONRPCResponse).model_validate(message)


def to_wire(message: JSONRPCMessage) -> Message:
    """A replayed envelope back on the wire, exactly as it was given to the store."""
    return message.model_dump(mode="json", by_alias=True, exclude_unset=True)


class StoredEventLog(EventLog):
    """An ``EventLog`` whose events are also kept in an ``EventStore``, under the store's ids.

    The live stream is still read from the log; the store answers reconnections. ``_store_lock``
    guards the pairing of each stored event with its place in the log (``_ids``, ``_seqs``), so
    that the store sees a stream's events in the order its readers do.
    """

    def __init__(self, stream_id: str, store: EventStore, can_request: bool = True, max_events: int = 1024) -> None:
        super().__init__(stream_id, can_request, max_events)
        self.store = store
        self._max_events = max_events
        self._store_lock = threading.Lock()
        self._ids: dict[int, EventId] = {0: self._store(None, 0)}
        self._seqs: dict[EventId, int] = {self._ids[0]: 0}

    def _untouched(self) -> bool:
        return False  # every answer is kept in the store, one sent as a JSON body too

    def _store(self, message: Message | None, seq: int) -> EventId:
        """Keep one event in the store. A store that fails is logged and the event keeps the log's
        own id, so the live stream and the call still finish; only resuming past it is lost."""
        try:
            return self.store.store_event(self.stream_id, None if message is None else to_model(message))
        except Exception:  # the store is user code: its failure must not strand the request's answer
            logger.exception("event_store.store_event failed; event %d of stream %s is not resumable",
                             seq, self.stream_id)
            return super().event_id(seq)

    def _append(self, message: Message | None, final: bool) -> None:
        with self._store_lock:
            seq = self.last + 1
            event_id = self._store(message, seq)
            self._ids[seq] = event_id
            self._seqs[event_id] = seq
            dropped = self._ids.pop(seq - self._max_events - 1, None)  # as far back as the log keeps
            if dropped is not None:
                self._seqs.pop(dropped, None)
            super()._append(message, final)

    def event_id(self, seq: int) -> str:
        with self._store_lock:
            return self._ids[seq]

    def position(self, event_id: str) -> int | None:
        """The log's sequence number of the event the store knows as ``event_id``."""
        with self._store_lock:
            return self._seqs.get(event_id)


def replay(store: EventStore, last_event_id: EventId) -> tuple[StreamId | None, list[tuple[Message, EventId | None]]]:
    """What ``store`` holds after ``last_event_id``: the stream's id and its events in wire form."""
    events: list[tuple[Message, EventId | None]] = []
    stream_id = store.replay_events_after(last_event_id, lambda event: events.append(
        (to_wire(event.message), event.event_id)))
    return stream_id, events
