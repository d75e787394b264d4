"""Outboxes: the one channel a request's outgoing messages travel on, ending with its response.

When the client goes away the transport aborts the outbox, which wakes every wait of that request
with "Connection closed". Nothing here knows about HTTP, WSGI or stdio: transports implement
``Outbox._deliver`` or drain a ``QueueOutbox``; an ``EventLog`` keeps what a resuming client replays.
"""

from __future__ import annotations

import logging
import secrets
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Callable

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.workers import Channel, Condition, Event, Lock, RLock, Waiter, monotonic
from minimcp.types import REQUEST_TIMEOUT

__all__ = ["EventLog", "LogEntry", "Outbox", "QueueOutbox"]

logger = logging.getLogger("minimcp.server.outbox")


class Outbox(ABC):
    """The channel one request's outgoing messages travel on, in order, ending with its response.

    ``can_request`` says whether server-to-client requests may travel here (a JSON-only response, a
    2026-07-28 request or a single-threaded WSGI server cannot carry them).
    """

    def __init__(self, can_request: bool = True) -> None:
        self.can_request = can_request
        # _lock guards _done, _waiters, _on_end and the making of _cancelled (see ``cancelled``).
        self._lock = Lock()
        self._cancelled: Event | None = None
        self._done = False
        #: Whether the client cancelled the request, which then ends without its response.
        self.unanswered = False
        self._waiters: set[Waiter] = set()
        self._on_end: list[Callable[[], None]] | None = None

    @property
    def cancelled(self) -> Event:
        """Set once the request is cancelled (timed out, or its client gone). Made on first use:
        an ``Event`` costs more than the rest of an outbox, and most requests never look at it."""
        cancelled = self._cancelled
        if cancelled is None:
            with self._lock:
                if self._cancelled is None:
                    self._cancelled = Event()
                cancelled = self._cancelled
        return cancelled

    @cancelled.setter
    def cancelled(self, event: Event) -> None:
        self._cancelled = event

    def _stopped(self) -> bool:
        """Whether the request is cancelled, without making the event (so also under ``_lock``)."""
        cancelled = self._cancelled
        return cancelled is not None and cancelled.is_set()

    @property
    def done(self) -> bool:
        return self._done

    def send(self, message: Message) -> None:
        """Queue a notification or server-to-client request; dropped once the request has ended."""
        if not self._done and not self._stopped():
            self._deliver(message, False)

    def close(self, response: Message) -> None:
        """Deliver the final response; only the first call counts."""
        self._finish(response, hand_back=False)

    def answer_here(self, response: Message) -> Message | None:
        """End the request with ``response`` for a transport that ran it on its own thread: when
        nothing was handed over before it (``_untouched``), ``response`` is returned for the
        transport to write as the whole answer; else it goes as ``close`` sends it (``None``).
        Sends are dropped from here on; one racing this check loses to the answer, as it would
        behind a queued one."""
        return self._finish(response, hand_back=True)

    def _untouched(self) -> bool:
        """Whether the transport has been handed nothing of this request yet, and can take an
        answer given here as its whole body (``False``: every answer goes through ``_deliver``)."""
        return False

    def _finish(self, response: Message, hand_back: bool) -> Message | None:
        """Mark the request answered (only the first answer counts), then deliver ``response``, or,
        with ``hand_back`` and nothing handed over yet, return it; then run the ``on_end`` callbacks."""
        with self._lock:
            if self._done:
                return None
            self._done = True
            callbacks, self._on_end = self._on_end, None
        handed_back = hand_back and not self.unanswered and self._untouched()
        if not handed_back and not self.unanswered:
            self._deliver(response, True)
        for callback in callbacks or ():
            callback()
        return response if handed_back else None

    def time_out(self, response: Message) -> None:
        """The request ran out of time: answer ``response`` now and mark it cancelled, so its body
        (which no one can interrupt) sees ``ctx.cancelled``, sends nothing more and, when it
        returns, has its own answer dropped. A question it is waiting on ends at once."""
        self.cancelled.set()
        self.close(response)
        with self._lock:
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.fail(jsonrpc.connection_closed())

    def cancel(self) -> None:
        """The client cancelled the request (``notifications/cancelled``): abort it and, as the
        specification asks, never answer it. A queue's reader ends its stream when ``abort`` wakes
        it; a resumable stream stays open and quiet until the client leaves, as the official and
        TypeScript servers leave it (ended, it would be resumed by a client waiting for an answer)."""
        self.unanswered = True
        self.abort()

    def abort(self) -> None:
        """The client went away: mark the request cancelled and end every wait it has."""
        self.cancelled.set()
        with self._lock:
            waiters = list(self._waiters)
            callbacks, self._on_end = self._on_end, None
        for waiter in waiters:
            waiter.fail(jsonrpc.connection_closed())
        for callback in callbacks or ():
            callback()

    def on_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, when this request ends (answered or aborted); now if it has.

        What no worker's ``finally`` ends (an open ``subscriptions/listen``) leaves its bookkeeping here.
        """
        with self._lock:
            if not self._done and not self._stopped():
                if self._on_end is None:
                    self._on_end = []
                self._on_end.append(callback)
                return
        callback()

    @property
    def backlog(self) -> int:
        """Messages queued here that the transport has not taken yet (0 where it writes at once)."""
        return 0

    def close_stream(self) -> None:
        """Let the transport end the response connection now while the request keeps running.

        Only a resumable stream (``EventLog``) can do this: the client reconnects and receives the
        rest from the log. Everywhere else there is no way back to the client, so this is a no-op.
        """

    def track(self, waiter: Waiter) -> None:
        with self._lock:
            self._waiters.add(waiter)
        if self._stopped():
            waiter.fail(jsonrpc.connection_closed())

    def untrack(self, waiter: Waiter) -> None:
        with self._lock:
            self._waiters.discard(waiter)

    @abstractmethod
    def _deliver(self, message: Message, final: bool) -> None:
        """Hand one message to the transport; ``final`` marks the response that ends the request."""


class QueueOutbox(Outbox):
    """An outbox the transport drains from its own thread (an HTTP response body, an in-memory call).

    The messages travel on a ``Channel``: every call's answer crosses from its worker to the transport
    here. ``abort`` puts a ``None`` that ends the
    current wait early.
    """

    def __init__(self, can_request: bool = True) -> None:
        super().__init__(can_request)
        self._queue: Channel[tuple[Message, bool] | None] = Channel()

    def _deliver(self, message: Message, final: bool) -> None:
        self._queue.put((message, final))

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

    def _untouched(self) -> bool:
        return not self._queue.qsize()  # saves the queue's put and the reader's get

    def get(self, timeout: float) -> tuple[Message, bool] | None:
        """The next message and whether it is the final response; ``None`` after ``timeout`` seconds,
        or at once when the request is aborted (a stream with no final response then ends)."""
        return self._queue.take(timeout)

    def abort(self) -> None:
        super().abort()
        self._queue.put(None)

    def drain(self, on_message: Callable[[Message], None], method: str, timeout: float | None) -> Message:
        """The request's messages until its response, each interim one to ``on_message`` on this
        thread; ``timeout`` bounds the whole wait, as over HTTP, so a server that keeps sending
        progress cannot hold the caller past it. A cancelled request still ends with its response
        when one was queued (a tool's timeout answer, ``time_out``); an aborted one has none."""
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            remaining = 1.0 if deadline is None else deadline - monotonic()
            item = self.get(min(remaining, 1.0)) if remaining > 0 else None
            if item is None:
                if self._stopped():
                    raise jsonrpc.connection_closed()
                if deadline is not None and monotonic() >= deadline:
                    self.abort()
                    raise MCPError(REQUEST_TIMEOUT, f"Request '{method}' timed out")
                continue
            message, final = item
            if final:
                return message
            if not self._stopped():
                on_message(message)


@dataclass(frozen=True)
class LogEntry:
    """One entry of an ``EventLog``: ``message`` is ``None`` where the server ended the connection."""

    seq: int
    message: Message | None
    final: bool


class EventLog(Outbox):
    """A resumable outbox: every message is kept, numbered, so a reconnecting client can replay it.

    Readers never consume: the response that first carries the stream and every later resumption
    (``Last-Event-ID``) read from their own position. ``close_stream`` appends a marker where the
    current reader ends its connection. The log is bounded: past ``max_events`` the oldest entries
    are dropped, and a reader that fell behind them continues from the oldest one kept.
    """

    def __init__(self, stream_id: str | None = None, can_request: bool = True, max_events: int = 1024) -> None:
        super().__init__(can_request)
        self._stream_id = stream_id
        # _cond guards _events, _last and the making of _stream_id; finished_at is set once under it
        # and may be read without it (a single attribute read) by whoever decides whether the
        # finished log is still kept.
        # Over an RLock, whose owner checks are C methods: a Condition over a plain Lock looks for
        # them, fails and falls back to Python on every build and notify.
        self._cond = Condition(RLock())
        self._events: deque[LogEntry] = deque(maxlen=max_events)
        self._last = 0
        self.finished_at: float | None = None

    @property
    def stream_id(self) -> str:
        """The stream's part of its events' ids; given, or a random one made when first asked for
        (under ``_cond``, so every reader gets the same; once made, one attribute read): an answer
        sent as one JSON body needs none."""
        stream_id = self._stream_id
        if stream_id is None:
            with self._cond:
                if self._stream_id is None:
                    self._stream_id = secrets.token_hex(8)
                stream_id = self._stream_id
        return stream_id

    def _untouched(self) -> bool:
        # Nothing logged: the answer is the whole JSON body, as the HTTP edge sends a log whose
        # first entry is the final one, and no entry is kept of it.
        with self._cond:
            return self._last == 0

    def _append(self, message: Message | None, final: bool) -> None:
        with self._cond:
            self._last += 1
            self._events.append(LogEntry(self._last, message, final))
            if final:
                self.finished_at = monotonic()
            self._cond.notify_all()

    def _deliver(self, message: Message, final: bool) -> None:
        self._append(message, final)

    def close_stream(self) -> None:
        if not self.done:
            self._append(None, False)

    def share(self) -> None:
        """The answer became a stream a client may resume: make it readable where resumptions
        arrive. Here, in this process only, where the log already is."""

    def entries(self) -> list[LogEntry]:
        """What the log holds now, oldest first."""
        with self._cond:
            return list(self._events)

    def read(self, after: int, timeout: float) -> LogEntry | None:
        """The first entry after sequence number ``after``; ``None`` if none arrives within ``timeout``."""
        with self._cond:
            # One wait is enough: only ``_append`` notifies, after advancing ``_last`` under the same
            # lock, so a reader woken before its timeout finds an entry past ``after``.
            if self._last <= after and (not self._cond.wait(timeout) or self._last <= after):
                return None
            oldest = self._events[0]
            if oldest.seq > after + 1:
                logger.warning("stream %s: events %d-%d were dropped before a reader got them",
                               self.stream_id, after + 1, oldest.seq - 1)
                return oldest
            return self._events[after - oldest.seq + 1]

    def event_id(self, seq: int) -> str:
        """The SSE id of entry ``seq`` (0: the priming event), what a client resumes from."""
        return f"{self.stream_id}:{seq}"

    @property
    def last(self) -> int:
        """The sequence number of the newest entry (0 while the log is empty)."""
        with self._cond:
            return self._last

    def exhausted(self, after: int) -> bool:
        """Whether a reader past ``after`` has seen the final response and nothing can follow."""
        with self._cond:
            return self.finished_at is not None and after >= self._last

