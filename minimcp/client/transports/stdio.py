"""A server subprocess speaking newline-delimited JSON on its stdin and stdout; its lifetime and
the threads that read and write its pipes."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from typing import IO, Any

from minimcp import jsonrpc
from minimcp.client.transports.base import Handler, Headers, StreamPairContext
from minimcp.client.transports.router import MessageRouter
from minimcp.jsonrpc import MCPError, Message
from minimcp.shared.line_writer import LineWriter
from minimcp.types import REQUEST_TIMEOUT

logger = logging.getLogger("minimcp.client")

#: How long ``close`` waits for a stdio server to exit on its own, then after SIGTERM.
STDIO_EXIT_GRACE = 2.0
#: How long a message waits for room to be written to a server that stopped reading its stdin.
WRITE_TIMEOUT = 30.0


class StdioTransport(StreamPairContext):
    """A server subprocess speaking newline-delimited JSON on its stdin and stdout."""

    def __init__(self, command: str, args: list[str], env: dict[str, str], cwd: str | None, errlog: IO[str] | None) -> None:
        self._argv = [command, *args]
        self._env = env
        self._cwd = cwd
        self._errlog = errlog
        self._process: subprocess.Popen[bytes] | None = None
        self._router = MessageRouter("minimcp-stdio", self._write)
        #: Writes the server's stdin on a thread of its own: a server that stops reading blocks only it.
        self._writer: LineWriter | None = None
        self._reader: threading.Thread | None = None

    def connect(self, handler: Handler) -> None:
        self._router.handler = handler
        stderr: Any = self._errlog
        try:
            stderr.fileno()
        except (AttributeError, OSError, ValueError):
            stderr = None  # pytest's captured streams have no descriptor; inherit ours instead
        self._process = subprocess.Popen(
            self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=self._env, cwd=self._cwd
        )
        assert self._process.stdin is not None
        self._writer = LineWriter(self._process.stdin, "minimcp-stdio-client-writer")
        self._reader = threading.Thread(target=self._read_loop, name="minimcp-stdio-reader", daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if not line.strip():
                continue
            try:
                message = jsonrpc.decode(line)
            except MCPError:
                logger.warning("Ignoring a line from the server that is not JSON: %.200r", line)
                continue
            if isinstance(message, dict):
                self._router.route(message)
        self._router.end()

    def _write(self, message: Message) -> None:
        """Queue ``message`` for the server's stdin; a write that fails later (the server exited)
        surfaces as the reader seeing the pipe close, which fails every waiting request."""
        writer = self._writer
        if writer is None or writer.broken.is_set():
            raise jsonrpc.connection_closed()
        if not writer.put(jsonrpc.encode(message) + b"\n", WRITE_TIMEOUT):
            raise MCPError(REQUEST_TIMEOUT, f"The server has not read its stdin for {WRITE_TIMEOUT:.0f} s; "
                                            f"{message.get('method', 'the message')} was not sent")

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        return self._router.exchange(message, self._write, timeout)

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        self._write(message)

    def listen(self, *, headers: Headers | None = None) -> None:
        """Nothing to open: on stdio every server message already arrives on the one pipe."""

    def abandon(self, request_id: Any) -> bool:
        self._router.abandon(request_id)
        return False

    def close(self) -> None:
        process, self._process = self._process, None
        writer, self._writer = self._writer, None
        if process is None:
            return
        # Closing stdin tells the server to exit; it cannot be closed under a write blocked on a server
        # that stopped reading, which only ends once the server is stopped below.
        flushed = writer is None or writer.close(STDIO_EXIT_GRACE)
        if flushed:
            self._close_stdin(process)
        try:
            process.wait(STDIO_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(STDIO_EXIT_GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STDIO_EXIT_GRACE)
        if not flushed and writer is not None and writer.join(STDIO_EXIT_GRACE):
            self._close_stdin(process)
        if self._reader is not None:
            self._reader.join(STDIO_EXIT_GRACE)
        if process.stdout is not None:
            process.stdout.close()

    @staticmethod
    def _close_stdin(process: subprocess.Popen[bytes]) -> None:
        if process.stdin is not None:
            try:
                process.stdin.close()
            except OSError:
                pass


#: The variables a stdio server inherits from us (as in the official SDK); the rest is ``env=``.
DEFAULT_INHERITED_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


def default_environment() -> dict[str, str]:
    """The inherited part of a stdio server's environment; values starting with ``()`` are bash
    exported functions, which a child shell would execute, so they are never passed on."""
    env = {key: os.environ[key] for key in DEFAULT_INHERITED_ENV_VARS if key in os.environ}
    return {key: value for key, value in env.items() if not value.startswith("()")}
