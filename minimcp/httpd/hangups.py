"""Noticing a client that hangs up while its request runs and nothing is being written to it.

A WSGI app learns that its client left only when a write fails. An app whose answer is one body
written at the end (a long call answered as JSON), or a stream that stays quiet for a while, would
run on for nothing. ``Hangups`` watches the sockets of such requests from one thread of its own
and calls the app back when a peer closes: the thread starts with the first socket watched and
ends once none has been watched for ``IDLE`` seconds, and a check costs one ``poll`` per
``INTERVAL`` over every watched socket, so a request that ends sooner is never looked at.

What a closed peer looks like: on Linux ``POLLRDHUP`` (the peer's FIN, even behind unread bytes
of a next request pipelined on the connection); elsewhere a readable socket whose peeked read
returns nothing. A socket whose peer sent more bytes instead can no longer be told apart from one
that is going to close, and is left alone (its request ends as it would without the watch).

Where the socket comes from is the WSGI adapter's to know (``minimcp.server.edges.wsgi.hangup_watcher``:
the servers that hand it to the app in the environ); under any other server a hang-up is noticed
at the next write, as before.
"""

from __future__ import annotations

import itertools
import logging
import select
import socket
import threading
from collections.abc import Callable

logger = logging.getLogger("minimcp.httpd")

#: Seconds between two looks at the watched sockets (and the longest a new watch waits for its first).
INTERVAL = 0.25
#: Seconds the thread stays without a socket to watch before it ends.
IDLE = 30.0

_POLL = getattr(select, "poll", None)
#: Whether this system can watch a socket at all (``poll``).
CAN_WATCH = _POLL is not None
_RDHUP: int = getattr(select, "POLLRDHUP", 0)
#: What the poll asks for: the peer's FIN where the system reports it apart, else readability.
_ASKED = _RDHUP if _RDHUP else getattr(select, "POLLIN", 0)
_CLOSED = _RDHUP | getattr(select, "POLLHUP", 0) | getattr(select, "POLLERR", 0) | getattr(select, "POLLNVAL", 0)

Unwatch = Callable[[], None]


class _Watch:
    __slots__ = ("sock", "on_hangup")

    def __init__(self, sock: socket.socket, on_hangup: Callable[[], None]) -> None:
        self.sock = sock
        self.on_hangup = on_hangup


class Hangups:
    """One thread watching client sockets for a closed peer (see the module text).

    ``_cond`` (its lock) guards ``_watched`` (key -> watch) and ``_thread``.
    """

    def __init__(self, interval: float = INTERVAL, idle: float = IDLE, thread_name: str = "minimcp-hangups") -> None:
        self.interval = interval
        self.idle = idle
        self.thread_name = thread_name
        self._cond = threading.Condition()
        self._watched: dict[int, _Watch] = {}
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, sock: socket.socket, on_hangup: Callable[[], None]) -> Unwatch:
        """Call ``on_hangup`` once, from the watching thread, if ``sock``'s peer closes before the
        returned function is called (which may be called any number of times, from any thread)."""
        with self._cond:
            key = next(self._keys)
            self._watched[key] = _Watch(sock, on_hangup)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
                self._thread.start()
            elif len(self._watched) == 1:
                self._cond.notify()

        def unwatch() -> None:
            with self._cond:
                self._watched.pop(key, None)

        return unwatch

    def _run(self) -> None:
        assert _POLL is not None
        while True:
            with self._cond:
                if not self._watched:
                    self._cond.wait(self.idle)
                    if not self._watched:
                        self._thread = None
                        return
                watched = list(self._watched.items())
            poller = _POLL()
            by_fd: dict[int, tuple[int, _Watch]] = {}
            for key, entry in watched:
                fd = entry.sock.fileno()
                if fd >= 0:
                    by_fd[fd] = (key, entry)
                    poller.register(fd, _ASKED)
            events = poller.poll(self.interval * 1000)  # also the pause between two looks
            gone = [by_fd[fd] for fd, happened in events if self._closed(*by_fd[fd], happened)]
            with self._cond:
                # Only a watch still there: an unwatched socket may have been handed on, or closed.
                hung_up = [entry for key, entry in gone if self._watched.pop(key, None) is entry]
            for entry in hung_up:
                try:
                    entry.on_hangup()
                except Exception:  # the thread serves every watch: one failing callback must not end it
                    logger.exception("a hang-up callback failed")

    def _closed(self, key: int, entry: _Watch, events: int) -> bool:
        """Whether ``events`` on ``entry``'s socket say its peer closed. A socket readable with the
        bytes of a next request cannot say so any more, and is no longer watched."""
        if events & _CLOSED:
            return True
        try:
            if entry.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                return True
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # reset by the peer
            return True
        except ValueError:  # a TLS socket, which cannot peek
            pass
        with self._cond:
            if self._watched.get(key) is entry:
                del self._watched[key]
        return False


#: The process's one watcher, shared by every server and app in it.
HANGUPS = Hangups()


__all__ = ["CAN_WATCH", "HANGUPS", "Hangups", "Unwatch"]
