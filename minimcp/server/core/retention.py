"""The resumable response streams of one legacy session (SSE answers a client resumes with ``Last-Event-ID``).

A client that lost its connection mid-answer comes back naming the stream and the last event it
read; the session keeps each stream's log for that, bounded in time and in number.
"""

from __future__ import annotations

from collections import OrderedDict

from minimcp.server.core.outbox import EventLog
from minimcp.server.core.workers import Lock, monotonic

__all__ = ["MAX_STREAMS", "STREAM_SWEEP", "STREAM_TTL", "RetainedStreams"]

#: How long a finished response stream stays resumable, and how many streams a session keeps.
STREAM_TTL = 300.0
MAX_STREAMS = 64
#: The shortest pause between two sweeps of a session's expired streams.
STREAM_SWEEP = 1.0


class RetainedStreams:
    """The logs of one session's resumable streams, by stream id."""

    def __init__(self) -> None:
        # _lock guards _streams and _swept.
        self._lock = Lock()
        self._streams: OrderedDict[str, EventLog] = OrderedDict()
        self._swept = 0.0

    def keep(self, log: EventLog) -> None:
        """Keep ``log`` so a client that lost its connection can resume it by event id.

        Bounded: a finished stream is kept for ``STREAM_TTL`` seconds (forgotten by the first keep
        that sweeps after that; a keep sweeps when ``STREAM_SWEEP`` seconds have passed since the
        last sweep, so a busy session does not scan every kept stream on every call), and beyond
        ``MAX_STREAMS`` the oldest streams (finished ones first) are forgotten.
        """
        now = monotonic()
        with self._lock:
            if now >= self._swept + STREAM_SWEEP:
                self._swept = now
                for stream_id, kept in list(self._streams.items()):
                    if kept.finished_at is not None and now - kept.finished_at > STREAM_TTL:
                        del self._streams[stream_id]
            self._streams[log.stream_id] = log
            while len(self._streams) > MAX_STREAMS:
                oldest = next(iter(self._streams))
                if self._streams[oldest].finished_at is None:  # else it is the oldest finished one already
                    oldest = next((sid for sid, kept in self._streams.items() if kept.finished_at is not None), oldest)
                del self._streams[oldest]

    def get(self, stream_id: str) -> EventLog | None:
        with self._lock:
            return self._streams.get(stream_id)
