"""The stdio transport: newline-delimited JSON-RPC on stdin/stdout.

While serving, the protocol owns a private duplicate of file descriptor 1 and descriptor 1 itself
is pointed at stderr, so a stray ``print`` in a tool (or a C library writing to stdout) can never
corrupt the stream. Every message is written whole, under one lock, on one line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.server.lowlevel.calls import Outbox
from minimcp.server.lowlevel.dispatch import MODERN
from minimcp.server.lowlevel.sessions import Connection
from minimcp.shared.transport_context import TransportContext

if TYPE_CHECKING:
    from minimcp.server.lowlevel.server import Server

logger = logging.getLogger("minimcp.server.stdio")

#: The transport context of a message, by whether its session is legacy (which can ask back).
_TRANSPORTS = {legacy: TransportContext(kind="stdio", can_send_request=legacy) for legacy in (False, True)}


class _Writer:
    """The one thread that writes the protocol stream; the reader loop and every worker queue whole
    lines for it.

    A client that stops reading fills the pipe and blocks that thread in ``write``; nobody else waits
    on it: a line that cannot be queued within ``WRITE_TIMEOUT`` seconds is dropped with a warning,
    so a stalled client can never pin the workers of the pool.
    """

    #: How long a sender waits for room in the queue before dropping its line.
    WRITE_TIMEOUT = 30.0

    def __init__(self, stream: IO[bytes], max_queued: int = 4096) -> None:
        self._stream = stream
        self._lines: queue.Queue[bytes | None] = queue.Queue(max_queued)
        self._thread = threading.Thread(target=self._run, name="minimcp-stdio-writer", daemon=True)
        self._thread.start()

    def write(self, message: Message) -> None:
        try:
            self._lines.put(jsonrpc.encode(message) + b"\n", timeout=self.WRITE_TIMEOUT)
        except queue.Full:
            logger.warning("stdout has not been read for %.0fs; dropped a message", self.WRITE_TIMEOUT)

    def _run(self) -> None:
        while True:
            line = self._lines.get()
            if line is None:
                return
            try:
                self._stream.write(line)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                logger.debug("stdout closed; dropped a message")

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (waiting at most ``timeout`` seconds), then stop the thread."""
        try:
            self._lines.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)


class _StdioOutbox(Outbox):
    def __init__(self, writer: _Writer, can_request: bool, on_final: Any = None) -> None:
        super().__init__(can_request)
        self._writer = writer
        self._on_final = on_final

    def _deliver(self, message: Message, final: bool) -> None:
        self._writer.write(message)
        if final and self._on_final is not None:
            self._on_final()


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


def serve_stdio(server: Server[Any], stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
                raise_exceptions: bool = False) -> None:
    """Serve one client on stdin/stdout until EOF; ``raise_exceptions`` shows it the real text of
    internal failures (for debugging), as the official SDK's flag does."""
    reader = stdin or sys.stdin.buffer
    writer = _Writer(stdout or _protect_stdout())
    connection = _Connection(server, writer, raise_exceptions)
    try:
        for line in iter(reader.readline, b""):
            if line.strip():
                connection.receive(line)
    finally:
        connection.close()
        writer.close()


class _Connection:
    """One stdio peer: its legacy session (after ``initialize``) and its requests in flight."""

    def __init__(self, server: Server[Any], writer: _Writer, raise_exceptions: bool) -> None:
        self._dispatcher = server.dispatcher
        self._raise_exceptions = raise_exceptions
        self._writer = writer
        self._session: Connection | None = None
        self._standalone = _StdioOutbox(writer, can_request=True)
        # _lock guards _inflight: request id -> outbox, for notifications/cancelled.
        self._lock = threading.Lock()
        self._inflight: dict[Any, Outbox] = {}

    def receive(self, line: bytes) -> None:
        message: Any = None
        try:
            message = jsonrpc.decode(line)
            kind = jsonrpc.kind_of(message)
        except MCPError as bad:
            self._writer.write(jsonrpc.error_from(jsonrpc.safe_id(message), bad))
            return
        if kind == "request":
            self._request(message)
        elif kind == "notification":
            self._notification(message)
        elif self._session is not None:
            self._dispatcher.handle_response(message, self._session)

    def _request(self, message: Message) -> None:
        try:
            if self._dispatcher.era_of(message) == MODERN:
                session = self._dispatcher.modern_session(message)
            elif message["method"] == "initialize" or self._session is None:
                session = self._dispatcher.new_legacy_session()
            else:
                session = self._session
            session.expose_errors = self._raise_exceptions
        except MCPError as refused:
            self._writer.write(jsonrpc.error_from(message["id"], refused))
            return
        request_id = message["id"]
        outbox = _StdioOutbox(self._writer, can_request=session.can_send_request, on_final=lambda: self._forget(request_id))
        with self._lock:
            self._inflight[request_id] = outbox
        answer = self._dispatcher.handle_request(message, session, outbox, _TRANSPORTS[session.can_send_request])
        if message["method"] == "initialize" and answer is not None and "result" in answer:
            self._session = session
            session.attach_standalone(self._standalone)
        if answer is not None:
            outbox.close(answer)

    def _forget(self, request_id: Any) -> None:
        with self._lock:
            self._inflight.pop(request_id, None)

    def _notification(self, message: Message) -> None:
        if message.get("method") == "notifications/cancelled":
            request_id = jsonrpc.request_id_in(message.get("params"))
            with self._lock:
                outbox = self._inflight.get(request_id)
            if outbox is not None:
                outbox.abort()
            return
        self._dispatcher.handle_notification(message, self._session)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
