"""Client transports: bytes and processes on one side, JSON-RPC message dicts on the other.

What this file owns: framing (SSE, newline-delimited JSON), HTTP status handling, the legacy
``Mcp-Session-Id``, SSE resumption (``retry:`` and ``Last-Event-ID``), subprocess lifetime, and
the thread that reads a pipe or a standalone stream. What it must not know: eras, capabilities,
callbacks. Headers arrive ready-made from the session; a transport without headers ignores them.

Theory of operation. A transport is given one *handler* at :meth:`Transport.connect`. Every
message the server sends that is not the answer to one of our requests (notifications and
server-to-client requests) goes to that handler. Where a message is tied to a request (the
request's own SSE stream, the in-memory exchange), the handler runs on the caller's thread before
:meth:`Transport.request` returns, which is what lets progress callbacks finish before
``call_tool`` does. Where nothing ties it (stdio, the standalone GET stream), it runs on the
transport's reader thread; server-to-client requests there get a thread of their own so that a
slow user cannot stall the pipe.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

import requests
import requests.auth
import urllib3.exceptions

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError, Message
from minimcp.types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST, REQUEST_TIMEOUT

if TYPE_CHECKING:
    from minimcp.server.memory import InMemoryEndpoint

logger = logging.getLogger("minimcp.client")

Handler = Callable[[Message], None]
Headers = Mapping[str, str]

#: How long a standalone GET may take to answer with its headers before we go on without it.
STANDALONE_OPEN_TIMEOUT = 10.0
#: Reconnection attempts for one request's SSE stream that make no progress before giving up.
MAX_RESUME_ATTEMPTS = 5
#: The wait before resuming when the server sent no ``retry:`` field (the TS SDK's default).
DEFAULT_RETRY_MS = 1000
#: The largest SSE event a client buffers before failing the stream (the official default, 1 MiB).
DEFAULT_MAX_SSE_EVENT_SIZE = 1024 * 1024
#: How long ``close`` waits for a stdio server to exit on its own, then after SIGTERM.
STDIO_EXIT_GRACE = 2.0


@runtime_checkable
class Transport(Protocol):
    """One connection to one server, as :class:`~minimcp.client.ClientSession` drives it."""

    def connect(self, handler: Handler) -> None:
        """Open the connection; server messages that answer none of our requests go to ``handler``."""

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        """Send one request and block until its response (a result or an error message) arrives.

        Raises ``MCPError`` -32001 after ``timeout`` seconds and -32000 when the connection dies.
        """

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        """Send a notification, or our answer to a server-to-client request."""

    def listen(self, *, headers: Headers | None = None) -> None:
        """Open the legacy standalone channel for messages not tied to a request, if there is one."""

    def abandon(self, request_id: Any) -> bool:
        """Stop waiting for ``request_id``'s response: its ``request`` raises -32000 ("Connection
        closed"); a no-op when it is not in flight. ``True`` when that alone told the server (HTTP
        closes the request's own stream, which is how a server learns its client left); otherwise
        the caller sends ``notifications/cancelled``."""

    def close(self) -> None:
        """End the connection and release its threads, sockets or process."""


class StreamPairContext:
    """``with transport as (read, write):``, the official SDK's transport shape.

    The official SDK yields two anyio streams; here one transport object carries both directions,
    so both ends are the transport itself and :class:`~minimcp.client.ClientSession` takes either.
    Leaving the block closes the connection.
    """

    def __enter__(self) -> tuple[Any, Any]:
        return self, self

    def __exit__(self, *exc_info: object) -> None:
        self.close()  # type: ignore[attr-defined]


class SessionExpired(MCPError):
    """The server no longer knows our legacy session (HTTP 404): the client must start over."""

    def __init__(self) -> None:
        super().__init__(INVALID_REQUEST, "Session not found")


def timed_out(method: str) -> MCPError:
    return MCPError(REQUEST_TIMEOUT, f"Request '{method}' timed out")


def _is_answer_to(message: Any, request_id: Any) -> bool:
    return isinstance(message, dict) and "method" not in message and message.get("id") == request_id


# --- SSE -------------------------------------------------------------------------------------


@dataclass
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


_LINE_END = re.compile(rb"\r\n|\n|\r")


class SSEParser:
    """Incremental ``text/event-stream`` decoder: feed it bytes as they arrive, get whole events.

    Follows the WHATWG rules the harness relies on: comment lines (``:``) and events whose data is
    empty (the priming event) are not dispatched, but their ``id:`` and ``retry:`` still count, so
    :attr:`last_event_id` and :attr:`retry_ms` are what a resumption needs.
    """

    def __init__(self, max_event_size: int | None = None) -> None:
        self.max_event_size = max_event_size
        self._buffer = b""
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Raises ``MCPError`` when one event grows past ``max_event_size`` bytes; the partial
        event is dropped so that a resumed stream starts clean."""
        self._buffer += chunk
        self._check_size(len(self._buffer))
        events: list[SSEEvent] = []
        start = 0
        while True:
            match = _LINE_END.search(self._buffer, start)
            if match is None:
                break
            if match.group() == b"\r" and match.end() == len(self._buffer):
                break  # a CR at the end of what we have may be the first half of a CRLF
            event = self._line(self._buffer[start:match.start()].decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
            start = match.end()
        self._buffer = self._buffer[start:]
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            data, event = "\n".join(self._data), self._event
            self._data, self._event, self._data_size = [], "", 0
            if not data:
                return None
            return SSEEvent(data=data, event=event or "message", id=self.last_event_id)
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_size += len(value.encode("utf-8")) + 1
            self._check_size(0)
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _check_size(self, pending: int) -> None:
        limit = self.max_event_size
        if limit is not None and self._data_size + pending > limit:
            self._buffer, self._data, self._event, self._data_size = b"", [], "", 0
            raise MCPError(CONNECTION_CLOSED, f"SSE stream failed: Server-sent event exceeded the {limit} byte limit.")


# --- Streamable HTTP -------------------------------------------------------------------------


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """The body as it arrives; ``read1`` returns whatever one network read produced, never waiting
    to fill a buffer, so an event is seen the moment its bytes land."""
    read1 = getattr(response.raw, "read1", None)
    if read1 is None:  # urllib3 < 2 has no read1; chunked bodies still arrive chunk by chunk
        yield from response.iter_content(chunk_size=None)
        return
    while True:
        chunk = read1(65536)
        if not chunk:
            return
        yield chunk


def _interrupt(response: requests.Response) -> None:
    """Wake the thread blocked reading ``response``; that thread closes it.

    Closing from here instead would wait for the reader to release the buffered stream's lock,
    i.e. for the server's next byte. urllib3 >= 2.3 can shut the socket down for reading;
    older versions leave the reader to its read timeout.
    """
    try:
        response.raw.shutdown()
    except (AttributeError, ValueError, RuntimeError, OSError):
        logger.debug("Cannot interrupt a streaming response", exc_info=True)


_STREAM_ERRORS = (
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    OSError,
)


class HttpTransport(StreamPairContext):
    """Streamable HTTP (both eras) over a ``requests.Session``.

    Each request is one POST whose answer is either a JSON body or an SSE stream read on the
    calling thread. A stream that ends before our response, after the server gave it an event
    id, is resumed with GET + ``Last-Event-ID`` after the server's ``retry:`` delay.
    """

    def __init__(
        self,
        url: str,
        http_client: requests.Session | None = None,
        terminate_on_close: bool = True,
        auth: requests.auth.AuthBase | None = None,
        max_sse_event_size: int | None = DEFAULT_MAX_SSE_EVENT_SIZE,
    ) -> None:
        if max_sse_event_size is not None and max_sse_event_size <= 0:
            raise ValueError("max_sse_event_size must be positive or None")
        self.url = url
        self.max_sse_event_size = max_sse_event_size
        self.terminate_on_close = terminate_on_close
        self.auth = auth
        self._owns_client = http_client is None
        self._http = http_client or requests.Session()
        self._timeout: tuple[float, float] | None = (30.0, 300.0) if self._owns_client else None
        self._handler: Handler | None = None
        self.session_id: str | None = None
        self._listener: threading.Thread | None = None
        self._closed = threading.Event()
        # Guards _standalone (the open GET response) against close() racing the listener thread,
        # and _streams (request id -> the SSE response it is read from) and _abandoned (ids of those
        # whose caller gave up) against abandon() racing the reading thread.
        self._lock = threading.Lock()
        self._standalone: requests.Response | None = None
        self._streams: dict[Any, requests.Response] = {}
        self._abandoned: set[Any] = set()
        self._standalone_headers: dict[str, str] = {}

    # -- plumbing

    def _headers(self, extra: Headers | None, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if extra:
            headers.update(extra)
        return headers

    def _read_timeout(self, timeout: float | None) -> tuple[float, float] | float | None:
        if timeout is None:
            return self._timeout
        connect = self._timeout[0] if self._timeout else timeout
        return (connect, timeout)

    def _post(self, message: Message, headers: Headers | None, timeout: float | None) -> requests.Response:
        merged = self._headers(headers, "application/json, text/event-stream")
        merged["Content-Type"] = "application/json"
        try:
            return self._http.post(
                self.url, data=jsonrpc.encode(message), headers=merged, stream=True, timeout=self._read_timeout(timeout),
                auth=self.auth,
            )
        except requests.exceptions.Timeout:
            raise timed_out(message.get("method", "message")) from None
        except requests.exceptions.RequestException:
            raise jsonrpc.connection_closed() from None

    def _get(self, headers: Headers | None, timeout: Any) -> requests.Response:
        return self._http.get(
            self.url, headers=self._headers(headers, "text/event-stream"), stream=True, timeout=timeout, auth=self.auth
        )

    # -- Transport

    def connect(self, handler: Handler) -> None:
        self._handler = handler

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        method = message["method"]
        deadline = None if timeout is None else time.monotonic() + timeout
        response = self._post(message, headers, timeout)
        if response.status_code == 404 and self.session_id is not None and method != "initialize":
            response.close()
            self.session_id = None
            raise SessionExpired()
        if message["method"] == "initialize" and response.ok and "mcp-session-id" in response.headers:
            self.session_id = response.headers["mcp-session-id"]
        content_type = response.headers.get("content-type", "")
        if not response.ok or not content_type.startswith("text/event-stream"):
            return self._single(response, method)
        parser = SSEParser(self.max_sse_event_size)
        attempts = 0
        request_id = message["id"]
        try:
            while True:
                self._track(request_id, response)
                seen = parser.last_event_id
                answer = self._drain(response, parser, request_id, method, deadline)
                if answer is not None:
                    return answer
                with self._lock:
                    abandoned = request_id in self._abandoned
                if parser.last_event_id is None or self._closed.is_set() or abandoned:
                    raise jsonrpc.connection_closed()
                attempts = 0 if parser.last_event_id != seen else attempts + 1
                if attempts >= MAX_RESUME_ATTEMPTS:
                    raise jsonrpc.connection_closed()
                response = self._resume(parser, headers, method, deadline)
        finally:
            with self._lock:
                self._streams.pop(request_id, None)
                self._abandoned.discard(request_id)

    def _track(self, request_id: Any, response: requests.Response) -> None:
        """Note the stream ``request_id`` is read from, so that ``abandon`` can close it."""
        with self._lock:
            abandoned = request_id in self._abandoned
            if not abandoned:
                self._streams[request_id] = response
        if abandoned:  # given up on while it reconnected
            response.close()
            raise jsonrpc.connection_closed()

    def abandon(self, request_id: Any) -> bool:
        with self._lock:
            response = self._streams.get(request_id)
            if response is not None:
                self._abandoned.add(request_id)
        if response is not None:
            _interrupt(response)
        return True

    def _single(self, response: requests.Response, method: str) -> Message:
        """A JSON body, or an HTTP error that may still carry a JSON-RPC error we can report."""
        try:
            body = response.content
        except _STREAM_ERRORS:
            raise jsonrpc.connection_closed() from None
        finally:
            response.close()
        try:
            message = jsonrpc.decode(body)
        except MCPError:
            message = None
        if isinstance(message, dict) and ("result" in message or isinstance(message.get("error"), dict)):
            return message
        raise MCPError(INTERNAL_ERROR, "Server returned an error response")

    def _drain(
        self, response: requests.Response, parser: SSEParser, request_id: Any, method: str, deadline: float | None
    ) -> Message | None:
        """Read one SSE stream until our response; ``None`` when it ended (or broke) first."""
        try:
            for chunk in _chunks(response):
                for event in parser.feed(chunk):
                    try:
                        message = jsonrpc.decode(event.data)
                    except MCPError:
                        logger.warning("Ignoring an SSE event that is not JSON: %.200r", event.data)
                        continue
                    if _is_answer_to(message, request_id):
                        return message
                    if isinstance(message, dict) and "method" in message and self._handler is not None:
                        self._handler(message)
                if deadline is not None and time.monotonic() > deadline:
                    raise timed_out(method)
        except (requests.exceptions.Timeout, urllib3.exceptions.ReadTimeoutError, socket.timeout):
            raise timed_out(method) from None
        except _STREAM_ERRORS:
            logger.debug("SSE stream for %s broke", method, exc_info=True)
        finally:
            response.close()
        return None

    def _resume(self, parser: SSEParser, headers: Headers | None, method: str, deadline: float | None) -> requests.Response:
        delay = (parser.retry_ms if parser.retry_ms is not None else DEFAULT_RETRY_MS) / 1000
        if deadline is not None and time.monotonic() + delay > deadline:
            raise timed_out(method)
        if self._closed.wait(delay):
            raise jsonrpc.connection_closed()
        resume_headers = dict(headers or {})
        resume_headers["Last-Event-ID"] = parser.last_event_id or ""
        remaining = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        try:
            response = self._get(resume_headers, self._read_timeout(remaining))
        except requests.exceptions.Timeout:
            raise timed_out(method) from None
        except requests.exceptions.RequestException:
            raise jsonrpc.connection_closed() from None
        if not response.ok:
            response.close()
            raise jsonrpc.connection_closed()
        return response

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        response = self._post(message, headers, None)
        with response:
            if not response.ok:
                logger.warning("Server refused %s with HTTP %s", message.get("method", "a response"), response.status_code)

    def listen(self, *, headers: Headers | None = None) -> None:
        """Open the GET stream and wait for its headers, so nothing sent on it is missed by the
        next call; any refusal (405, 400, ...) just means the server offers no such stream."""
        self._standalone_headers = dict(headers or {})
        if self._listener is not None and self._listener.is_alive():
            return  # after a new handshake the running loop reconnects with the new session id itself
        response = self._open_standalone(None)
        if response is not None:
            self._listener = threading.Thread(target=self._listen_loop, args=(response,), name="minimcp-http-listen",
                                              daemon=True)
            self._listener.start()

    def _open_standalone(self, last_event_id: str | None) -> requests.Response | None:
        headers = dict(self._standalone_headers)
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        read_timeout = self._timeout[1] if self._timeout else None
        try:
            response = self._get(headers, (STANDALONE_OPEN_TIMEOUT, read_timeout))
        except requests.exceptions.RequestException:
            logger.debug("No standalone stream", exc_info=True)
            return None
        if not response.ok or not response.headers.get("content-type", "").startswith("text/event-stream"):
            response.close()
            return None
        with self._lock:
            if self._closed.is_set():
                response.close()
                return None
            self._standalone = response
        return response

    def _listen_loop(self, response: requests.Response | None) -> None:
        parser = SSEParser(self.max_sse_event_size)
        while response is not None:
            try:
                for chunk in _chunks(response):
                    for event in parser.feed(chunk):
                        self._deliver(event)
            except Exception:  # this thread must end quietly however the stream ends
                if not self._closed.is_set():
                    logger.debug("Standalone stream broke", exc_info=True)
            finally:
                response.close()
            delay = (parser.retry_ms if parser.retry_ms is not None else DEFAULT_RETRY_MS) / 1000
            if self._closed.wait(delay):
                return
            response = self._open_standalone(parser.last_event_id)

    def _deliver(self, event: SSEEvent) -> None:
        try:
            message = jsonrpc.decode(event.data)
        except MCPError:
            logger.warning("Ignoring an SSE event that is not JSON: %.200r", event.data)
            return
        if isinstance(message, dict) and "method" in message and self._handler is not None:
            self._handler(message)

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        if self.terminate_on_close and self.session_id is not None:
            try:
                self._http.delete(
                    self.url, headers=self._headers(self._standalone_headers, "application/json"), timeout=(5.0, 5.0),
                    auth=self.auth,
                )
            except requests.exceptions.RequestException:
                logger.debug("DELETE of the session failed", exc_info=True)
        with self._lock:
            standalone, self._standalone = self._standalone, None
        if standalone is not None:
            _interrupt(standalone)
        if self._owns_client:
            self._http.close()


# --- stdio -----------------------------------------------------------------------------------


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
        # Serializes writes to the server's stdin so that two threads never interleave lines.
        self._write_lock = threading.Lock()
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
                threading.Thread(target=self._handler, args=(message,), name="minimcp-stdio-request", daemon=True).start()
            elif self._handler is not None:
                self._handler(message)
        with self._lock:
            self._dead = True
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.done.set()

    def _write(self, message: Message) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise jsonrpc.connection_closed()
        try:
            with self._write_lock:
                process.stdin.write(jsonrpc.encode(message) + b"\n")
                process.stdin.flush()
        except (OSError, ValueError):
            raise jsonrpc.connection_closed() from None

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
        if process is None:
            return
        if process.stdin is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
        try:
            process.wait(STDIO_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(STDIO_EXIT_GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STDIO_EXIT_GRACE)
        if self._reader is not None:
            self._reader.join(STDIO_EXIT_GRACE)
        if process.stdout is not None:
            process.stdout.close()


#: The variables a stdio server inherits from us (as in the official SDK); the rest is ``env=``.
DEFAULT_INHERITED_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


def default_environment() -> dict[str, str]:
    """The inherited part of a stdio server's environment; values starting with ``()`` are bash
    exported functions, which a child shell would execute, so they are never passed on."""
    env = {key: os.environ[key] for key in DEFAULT_INHERITED_ENV_VARS if key in os.environ}
    return {key: value for key, value in env.items() if not value.startswith("()")}


# --- in-memory -------------------------------------------------------------------------------


class InMemoryTransport(StreamPairContext):
    """A server object in this process, through its :meth:`in_memory_endpoint` (no sockets)."""

    def __init__(self, server: Any, raise_exceptions: bool = False) -> None:
        self._server = server
        self._raise_exceptions = raise_exceptions
        self._endpoint: InMemoryEndpoint | None = None
        self._handler: Handler | None = None

    def connect(self, handler: Handler) -> None:
        self._handler = handler
        self._endpoint = self._server.in_memory_endpoint(raise_exceptions=self._raise_exceptions)

    def _live(self) -> InMemoryEndpoint:
        if self._endpoint is None:
            raise jsonrpc.connection_closed()
        return self._endpoint

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        assert self._handler is not None
        answer = self._live().exchange(message, self._handler, timeout)
        if answer is None:
            raise jsonrpc.connection_closed()
        return answer

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        assert self._handler is not None
        self._live().exchange(message, self._handler)

    def listen(self, *, headers: Headers | None = None) -> None:
        assert self._handler is not None
        self._live().listen(self._handler)

    def abandon(self, request_id: Any) -> bool:
        if self._endpoint is not None:
            self._endpoint.abandon(request_id)
        return True

    def close(self) -> None:
        endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            endpoint.close()


__all__ = [
    "HttpTransport",
    "InMemoryTransport",
    "SSEEvent",
    "SSEParser",
    "StdioTransport",
    "Transport",
    "StreamPairContext",
    "default_environment",
    "timed_out",
]
