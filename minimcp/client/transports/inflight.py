"""One HTTP request in flight, and how another thread ends it at any point, head not yet come included.

A call blocks its thread from the moment its request goes out, and for most of a long call it
waits for the head of the answer: a server that answers one JSON body says nothing until the call
is done. Ending such a wait from another thread (a ``CancelScope``) means closing the socket it
waits on, which only the connection code sees. So the transport marks the stretch where the
connection code sends and waits (``InFlight.sending``, a context variable of the calling thread),
and the connection code names the socket it waits on there (``waiting_on``): minimcp's own
connections (``direct``) and the ``KeepAliveRetryAdapter``'s (``minimcp.client.keepalive``), the
one mounted on the sessions the client makes and the one to mount on a ``requests.Session`` of
your own. A session without it is ended once its head arrives.

Once the head came, the response being read is the thing to interrupt (``hold``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import requests

from minimcp.client.transports.responses import interrupt

#: The request the calling thread is sending, while the connection code sends it and waits for its head.
_sending: ContextVar[InFlight | None] = ContextVar("minimcp_http_sending", default=None)


class Stopped(requests.exceptions.ConnectionError):
    """The request was stopped from another thread before, or while, it went out."""

    def __init__(self) -> None:
        super().__init__("the request was stopped")


class InFlight:
    """One request of a transport, from its send to the end of its answer; ``stop`` ends it.

    ``_lock`` guards ``_sock`` (the socket its head is awaited on), ``_response`` (the answer
    being read), ``_sending``, ``_stopped`` and ``_over``. ``deadline`` (``time.monotonic()``,
    ``None``: none) is when the call gives up, which bounds what is sent on its behalf.
    """

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._response: Any = None
        self._sending = False
        self._stopped = False
        self._over = False

    @property
    def stopped(self) -> bool:
        with self._lock:
            return self._stopped

    def check(self) -> None:
        """Raise ``Stopped`` when the request was stopped: nothing more of it goes out."""
        if self.stopped:
            raise Stopped()

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        """The stretch where the connection code sends the request and waits for its head."""
        self.check()
        with self._lock:
            self._sending = True
        token = _sending.set(self)
        try:
            yield
        finally:
            _sending.reset(token)
            with self._lock:
                self._sending = False
                self._sock = None

    def hold(self, response: Any) -> None:
        """``response`` is this request's answer, being read from now on; closed and ``Stopped``
        when the request was stopped before."""
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._response = response
        if stopped:
            response.close()
            raise Stopped()

    def interrupt(self) -> bool:
        """Wake the thread reading this request's answer (it fails, and closes the response)
        without stopping the request; ``False`` when it is not reading one."""
        with self._lock:
            response = self._response
        if response is not None:
            interrupt(response)
        return response is not None

    def finish(self) -> None:
        """The exchange is over (answered, failed, or given up): nothing is left to stop."""
        with self._lock:
            self._over = True
            self._response = None

    def stop(self) -> bool:
        """End the request wherever it is: not sent yet, waiting for its head, or reading its answer.
        ``True`` when that ended its exchange (the connection it travels on is shut, or it never
        goes out); ``False`` when it was over already, or its head is awaited on a connection this
        cannot reach (then it ends once the head arrives)."""
        with self._lock:
            if self._over or self._stopped:
                return False
            self._stopped = True
            sock, response, reachable = self._sock, self._response, not self._sending or self._sock is not None
        if sock is not None:
            _shut(sock)
        elif response is not None:
            interrupt(response)
        return reachable

    def _attach(self, sock: socket.socket | None) -> bool:
        """Note (``None``: forget) the socket the head is awaited on; ``False`` when stopped already."""
        with self._lock:
            if not self._stopped:
                self._sock = sock
            return not self._stopped


def _shut(sock: socket.socket) -> None:
    """Shut ``sock`` both ways: the thread waiting on it wakes with an empty read, and the server
    sees the connection end."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


@contextlib.contextmanager
def waiting_on(sock: socket.socket | None) -> Iterator[None]:
    """For connection code: the calling thread sends its request on ``sock`` and waits for the head
    inside this block, where a ``stop`` from another thread shuts ``sock``. Raises ``Stopped`` at
    once when the request was stopped already."""
    in_flight = _sending.get()
    if in_flight is None or sock is None:
        yield
        return
    if not in_flight._attach(sock):
        raise Stopped()
    try:
        yield
    finally:
        in_flight._attach(None)


def stopped() -> bool:
    """For connection code about to send a request again: whether the one it sends was stopped."""
    in_flight = _sending.get()
    return in_flight is not None and in_flight.stopped


__all__ = ["InFlight", "Stopped", "stopped", "waiting_on"]
