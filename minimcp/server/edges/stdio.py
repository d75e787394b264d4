"""The stdio transport: newline-delimited JSON-RPC on stdin/stdout.

While serving, the protocol owns a private duplicate of file descriptor 1 and descriptor 1 itself
is pointed at stderr, so a stray ``print`` in a tool (or a C library writing to stdout) can never
corrupt the stream. Every message is one whole line, written by one thread (``LineWriter``) that
alone waits on a client that stops reading.

The end of stdin is the end of the client's requests, not of its interest in the answers: a client
may write its requests and close its end at once (``printf ... | server``), and the MCP spec has a
client close stdin and then wait for the server to exit. So calls still running at EOF finish and
answer (each bounded by its tool's timeout, all by ``EOF_GRACE``) before the server exits; what
waits on the client (a question, an open ``subscriptions/listen``) ends at once, as nothing more can
come from it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.dispatch import Dispatcher
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.peer import Peer
from minimcp.shared.line_writer import LineWriter

if TYPE_CHECKING:
    from minimcp.server.core.dispatch import ServedServer
    from minimcp.server.core.sessions import Connection

logger = logging.getLogger("minimcp.server.stdio")

#: Seconds the calls still running when stdin ends have to answer before the server exits without them.
EOF_GRACE = 30.0


class _Writer:
    """Frames messages for the one thread that writes the protocol stream (``LineWriter``).

    A line that cannot be queued within ``WRITE_TIMEOUT`` seconds is dropped with a warning, so a
    client that stopped reading can never pin the workers of the pool.
    """

    #: How long a sender waits for room in the queue before dropping its line.
    WRITE_TIMEOUT = 30.0

    def __init__(self, stream: IO[bytes], max_queued: int = 4096) -> None:
        self.lines = LineWriter(stream, "minimcp-stdio-writer", max_queued)

    def write(self, message: Message) -> None:
        if not self.lines.put(jsonrpc.encode(message) + b"\n", self.WRITE_TIMEOUT):
            logger.warning("stdout has not been read for %.0fs; dropped a message", self.WRITE_TIMEOUT)

    def close(self, timeout: float = 5.0) -> None:
        self.lines.close(timeout)


class _StdioOutbox(Outbox):
    def __init__(self, writer: _Writer, can_request: bool) -> None:
        super().__init__(can_request)
        self._writer = writer

    def _deliver(self, message: Message, final: bool) -> None:
        self._writer.write(message)


def _protect_stdout() -> IO[bytes]:
    """Move the protocol to a private descriptor and send descriptor 1 to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


@contextlib.contextmanager
def stdio_server(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """The process's stdin and a protected stdout, for ``server.run(read_stream, write_stream, options)``.

    From here on a stray ``print`` goes to stderr: the protocol owns the real stdout.
    """
    yield stdin or sys.stdin.buffer, stdout or _protect_stdout()


def serve_stdio(server: ServedServer, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
                raise_exceptions: bool = False, connection: Connection | None = None,
                eof_grace: float = EOF_GRACE) -> None:
    """Serve one client on stdin/stdout until EOF, then until the calls it left running have
    answered (at most ``eof_grace`` seconds); ``raise_exceptions`` shows it the real text of
    internal failures (for debugging), as the official SDK's flag does; ``connection``: the stream's
    legacy connection, when the caller built it (``serve_connection``)."""
    reader = stdin or sys.stdin.buffer
    writer = _Writer(stdout or _protect_stdout())
    peer = _Connection(server, writer, raise_exceptions, connection)
    try:
        for line in iter(reader.readline, b""):
            if line.strip():
                peer.receive(line)
        peer.finish(eof_grace)
    finally:
        peer.close()
        writer.close()


class _Connection:
    """One stdio peer: lines in, framed messages out; what they mean is the ``Peer``'s business."""

    def __init__(self, server: ServedServer, writer: _Writer, raise_exceptions: bool,
                 connection: Connection | None = None) -> None:
        self._writer = writer
        self._peer = Peer(server, "stdio", raise_exceptions, connection)
        self._peer.listen(_StdioOutbox(writer, can_request=True))
        # _running_changed (its lock) guards _running: the outboxes of calls a worker will answer.
        self._running_changed = threading.Condition()
        self._running: set[Outbox] = set()

    def receive(self, line: bytes) -> None:
        try:
            message, kind = jsonrpc.parse(line)
        except jsonrpc.Unreadable as bad:
            self._writer.write(bad.reply)
            return
        if kind == "notification":
            self._peer.notification(message)
        elif kind != "request":
            self._peer.response(message)
        else:
            try:
                outbox, answer = self._peer.request(message, self._outbox)
            except MCPError as refused:
                self._writer.write(jsonrpc.error_from(message["id"], refused))
                return
            if answer is not None:
                outbox.close(answer)
            elif not Dispatcher.streams(message):
                self._track(outbox)

    def _track(self, outbox: Outbox) -> None:
        """Count ``outbox``'s call as running until it is answered (or aborted)."""
        with self._running_changed:
            self._running.add(outbox)

        def ended() -> None:
            with self._running_changed:
                self._running.discard(outbox)
                self._running_changed.notify_all()

        outbox.on_end(ended)

    def finish(self, grace: float) -> None:
        """The client will send nothing more: end the waits for its answers, then give the calls
        still running up to ``grace`` seconds to answer."""
        self._peer.connection.pending.close(jsonrpc.connection_closed())
        with self._running_changed:
            if not self._running_changed.wait_for(lambda: not self._running, grace):
                logger.warning("stdin ended; %d call(s) still running after %g s are abandoned",
                               len(self._running), grace)

    def _outbox(self, can_request: bool) -> Outbox:
        return _StdioOutbox(self._writer, can_request)

    def close(self) -> None:
        self._peer.close()
