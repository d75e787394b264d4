"""The one thread that writes a newline-delimited stream (a stdio pipe), for both sides of stdio.

A peer that stops reading fills the pipe and blocks a ``write`` for as long as it likes. Only this
thread ever waits there; everyone else queues whole lines with a bound on the wait for room, so a
stalled peer can neither pin the server's workers nor hold a client's caller past its timeout,
and two threads' lines never interleave.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from typing import IO

logger = logging.getLogger("minimcp.stdio")


class LineWriter:
    """Writes queued lines to ``stream`` on a daemon thread named ``name``, in order."""

    #: How often an idle writer looks whether ``close`` asked it to stop. The ``None`` that ``close``
    #: queues ends it at once; this bound ends it too when that ``None`` found no room (a full queue).
    STOP_CHECK = 1.0

    def __init__(self, stream: IO[bytes], name: str, max_queued: int = 4096) -> None:
        self._stream = stream
        self._lines: queue.Queue[bytes | None] = queue.Queue(max_queued)
        self._stopping = threading.Event()
        #: Set once a write failed (the peer closed the pipe); later lines are not written.
        self.broken = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, line: bytes, timeout: float) -> bool:
        """Queue one whole line (ending in ``\\n``); ``False`` when no room freed up within ``timeout``."""
        try:
            self._lines.put(line, timeout=timeout)
        except queue.Full:
            return False
        return True

    def _run(self) -> None:
        while True:
            try:
                line = self._lines.get(timeout=self.STOP_CHECK)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            if line is None:
                return
            if self.broken.is_set():
                continue
            try:
                self._stream.write(line)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                logger.debug("the stream is closed; dropped a line")
                self.broken.set()

    def close(self, timeout: float = 5.0) -> bool:
        """Write what is queued (waiting at most ``timeout`` seconds in all), then stop the thread;
        whether it has ended.

        A peer that no longer reads can keep the thread blocked in ``write`` past that; it is a
        daemon and ends once the pipe takes the line or breaks, which is logged here.
        """
        deadline = time.monotonic() + timeout
        self._stopping.set()
        with contextlib.suppress(queue.Full):
            self._lines.put(None, timeout=timeout)
        self._thread.join(max(deadline - time.monotonic(), 0.0))
        if self._thread.is_alive():
            logger.warning("the peer has not read for %.0fs; %d queued lines may be lost", timeout,
                           self._lines.qsize())
            return False
        return True

    def join(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the thread to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
