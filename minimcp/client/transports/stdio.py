"""A server subprocess speaking newline-delimited JSON on its stdin and stdout; its lifetime and
the threads that read and write its pipes."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from typing import IO, Any

from minimcp import jsonrpc
from minimcp.client.transports.base import Handler, Headers, StreamPairContext, timed_out
from minimcp.jsonrpc import MCPError, Message
from minimcp.shared.line_writer import LineWriter
from minimcp.types import INTERNAL_ERROR, REQUEST_TIMEOUT

logger = logging.getLogger("minimcp.client")

#: How long ``close`` waits for a stdio server to exit on its own, then after SIGTERM.
STDIO_EXIT_GRACE = 2.0
#: How long a message waits for room to be written to a server that stopped reading its stdin.
WRITE_TIMEOUT = 30.0
#: How many server-to-client requests are answered at once, each on a thread of its own; one more is
#: refused at once (-32603 "Client busy"), so a server that floods us cannot make us start threads without end.
MAX_SERVER_REQUESTS = 32


class _Slot:
    """Where the reader thread leaves the response one waiting request is blocked on."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.message: Message | None = None


class StdioTransport(StreamPairContext):
    """A server subprocess speaking newline-delimited JSON on its stdin and stdout."""

    def __init__(self, command: str, args: list[str], env: dict[str, str], cwd: str | None, errlog: IO[str] | None) -> None:
        self._argv = [command, *args]
        self._env = env
        self._cwd = cwd
        self._errlog = errlog
        self._process: subprocess.Popen[bytes] | None = None
        self._handler: Handler | None = None
        # Guards _pending (request id -> slot) and _dead between callers and the reader thread.
        self._lock = threading.Lock()
        self._pending: dict[Any, _Slot] = {}
        self._dead = False
        # Counts the threads answering server-to-client requests: the reader takes a slot before it
        # starts one, the thread gives it back when its answer is sent.
        self._answering = threading.BoundedSemaphore(MAX_SERVER_REQUESTS)
        #: Writes the server's stdin on a thread of its own: a server that stops reading blocks only it.
        self._writer: LineWriter | None = None
        self._reader: threading.Thread | None = None

    def connect(self, handler: Handler) -> None:
        self._handler = handler
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
            if not isinstance(message, dict):
                continue
            if "method" not in message:
                with self._lock:
                    slot = self._pending.pop(message.get("id"), None)
                if slot is not None:
                    slot.message = message
                    slot.done.set()
            elif "id" in message and self._handler is not None:
                self._answer_in_turn(message)
            elif self._handler is not None:
                self._handler(message)
        with self._lock:
            self._dead = True
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.done.set()

    def _answer_in_turn(self, request: Message) -> None:
        """Answer a server-to-client request on a thread of its own, so a slow callback never stalls
        the pipe; beyond ``MAX_SERVER_REQUESTS`` at once, refuse it without starting a thread."""
        if not self._answering.acquire(blocking=False):
            self._refuse_busy(request)
            return
        try:
            threading.Thread(target=self._answer, args=(request,), name="minimcp-stdio-request", daemon=True).start()
        except RuntimeError:  # the system refused a thread
            self._answering.release()
            self._refuse_busy(request)

    def _answer(self, request: Message) -> None:
        assert self._handler is not None
        try:
            self._handler(request)
        finally:
            self._answering.release()

    def _refuse_busy(self, request: Message) -> None:
        refusal = jsonrpc.error(request["id"], INTERNAL_ERROR, f"Client busy: already answering {MAX_SERVER_REQUESTS} "
                                                              f"requests from this server; send {request['method']} again later")
        try:
            self._write(refusal)
        except MCPError as exc:  # the reader thread must go on reading whatever the writer's state
            logger.warning("Could not refuse the server's %s: %s", request["method"], exc)

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
        slot = _Slot()
        with self._lock:
            if self._dead:
                raise jsonrpc.connection_closed()
            self._pending[message["id"]] = slot
        try:
            self._write(message)
            # Without a timeout the wait still ends: the reader wakes every slot when the pipe closes.
            if not slot.done.wait(timeout):
                raise timed_out(message["method"])
        finally:
            with self._lock:
                self._pending.pop(message["id"], None)
        if slot.message is None:
            raise jsonrpc.connection_closed()
        return slot.message

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        self._write(message)

    def listen(self, *, headers: Headers | None = None) -> None:
        """Nothing to open: on stdio every server message already arrives on the one pipe."""

    def abandon(self, request_id: Any) -> bool:
        with self._lock:
            slot = self._pending.pop(request_id, None)
        if slot is not None:
            slot.done.set()  # with no message: the waiting request raises "Connection closed"
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
