"""A worker's socket: blocking, with the kernel bounding every wait (``SO_RCVTIMEO``/``SO_SNDTIMEO``).

A Python socket timeout makes each ``recv`` and ``send`` two system calls (a ``poll``, then the
call), and each ``settimeout`` a third (``ioctl``); every one of them releases and retakes the GIL,
and with several workers serving at once each release is a handoff between threads, which cost
more than the request itself. A blocking socket whose waits the kernel bounds makes the same
bounded read or send one system call.
"""

from __future__ import annotations

import socket
import struct
import sys

from minimcp.httpd.limits import RECV_SIZE


def _bound(seconds: float) -> bytes:
    """A wait bound as the socket option takes it; never zero, which would mean no bound at all."""
    micros = max(1, int(seconds * 1_000_000))
    if sys.platform == "win32":
        return struct.pack("I", max(1, micros // 1000))  # a DWORD of milliseconds
    return struct.pack("ll", micros // 1_000_000, micros % 1_000_000)  # struct timeval


def bound(sock: socket.socket, send_timeout: float, recv_timeout: float) -> None:
    """Bound each wait of ``sock``'s, once for the connection (the options outlast the switches
    between the loop's non-blocking mode and a worker's blocking one): each send by
    ``send_timeout`` (a client that stops reading for that long fails the send with an
    ``OSError``), each read by ``recv_timeout``."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _bound(send_timeout))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _bound(recv_timeout))


def take(sock: socket.socket) -> None:
    """Make ``sock``, whose waits ``bound`` set, a worker's: blocking."""
    sock.setblocking(True)


def recv(sock: socket.socket) -> bytes:
    """What arrives within the socket's read bound (``b""``: the peer closed); ``TimeoutError`` if nothing."""
    try:
        return sock.recv(RECV_SIZE)
    except BlockingIOError:  # the kernel's bound passed
        raise TimeoutError from None


def recv_within(sock: socket.socket, timeout: float, then: float) -> bytes:
    """``recv`` bounded by ``timeout`` for this read, the read bound ``then`` (the standing one)
    after it. A body's next bytes (an HTTP client sends a head and its body in two writes) mostly
    come within ``then``, so a wait at least that long is first made under the standing bound,
    without setting one (two system calls fewer); only a longer wait sets the rest of it."""
    if timeout >= then:
        try:
            return recv(sock)
        except TimeoutError:
            timeout -= then
            if timeout <= 0:
                raise
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _bound(timeout))
    try:
        return recv(sock)
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _bound(then))
