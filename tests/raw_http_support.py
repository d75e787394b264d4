"""A loopback TCP listener for the tests' hand-written HTTP servers: it counts the connections
it accepts (what a client's connection reuse is judged by) and serves each on a thread of its own.

A server subclasses ``CountingListener`` and defines ``handle(conn, number)``, ``number`` being
the connection's place in the count (1 for the first). ``lock`` guards ``connections`` and
whatever a subclass's handlers record beside it. A relay forwards each direction with ``pump``.
"""

from __future__ import annotations

import socket
import threading
from abc import ABC, abstractmethod


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Forward what ``source`` sends to ``sink`` until either end closes, then shut both."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class CountingListener(ABC):
    """Accepts connections on a free loopback port until ``close``, each handled on its own thread."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.lock = threading.Lock()
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @abstractmethod
    def handle(self, conn: socket.socket, number: int) -> None:
        """Serve one accepted connection, on a thread of its own."""

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # the listener closed
            with self.lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self.handle, args=(conn, number), daemon=True).start()

    def close(self) -> None:
        """Stop accepting: ``shutdown`` wakes the blocked ``accept`` (``close`` alone does not)."""
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self._accepting.join(10)
        assert not self._accepting.is_alive(), "the test server's accept loop did not stop"
