"""A threaded HTTP/1.1 server for WSGI apps that keeps connections alive and can face the internet.

Why minimcp has its own: werkzeug's development server answers every request with
``Connection: close`` (``http.server`` cannot drain an unread body before the next request line),
so each MCP request paid a TCP handshake and a fresh thread. MCP clients hold one connection and
send request after request on it; this server keeps the connection for the next one. It is what
``mcp.run(transport="streamable-http")`` uses; any WSGI app can run on it.

How it is built:

- Requests are parsed by h11 (sans-I/O, strict RFC 9112). Where h11 is lenient, ``_Parser`` is
  strict, refusing with ``400`` what gunicorn refuses: CR and LF appear in a request head or in
  chunked framing only as CRLF line ends, and no other control byte appears there at all; a few
  empty lines before a request line are skipped, more are refused; one Content-Length field with
  one number, or one chunked Transfer-Encoding, never both, and no Transfer-Encoding in HTTP/1.0;
  a chunk-size line is the size and well-formed extensions only; trailers carry no framing,
  routing or credentials field; a method is an upper-case token.
- One thread, the loop (``serve_forever``), owns the listening socket and every connection that is
  not running a request. Idle keep-alive connections, and requests whose head is still arriving,
  wait in a ``selectors`` selector: they cost a descriptor and no thread, and the loop reads their
  bytes without blocking. A complete head goes to a worker thread, which runs the app, reads the
  body as the app asks for it, sends the answer, and hands the connection back to the loop.
- The loop never waits for a client. At ``max_connections`` a new connection closes the
  longest-idle keep-alive one to take its place; it is answered ``503`` with ``Retry-After``, by a
  non-blocking send, when every connection holds a request, when its address is at
  ``max_connections_per_peer``, or when no descriptor is left; a closing connection's lingering
  read (so the kernel does not reset away the last response) is done by the selector, bounded in
  time and bytes. Such events are logged at most once per interval, with a count.
- Time limits: a request head must be complete ``header_timeout`` seconds after its first byte (or
  after the connection opened), else ``408`` and close; a body must be in ``body_timeout`` seconds
  after its head; a connection idle between requests closes after ``idle_timeout``, and so does
  one whose client stops reading a response for that long.

What it speaks: HTTP/1.0 and 1.1; request bodies framed by Content-Length or chunked;
``Expect: 100-continue``; responses framed by the app's Content-Length, else chunked (HTTP/1.1)
or closed (HTTP/1.0), each chunk sent as soon as the app yields it, which is what SSE needs.
Limits: request target and each header line 8 KiB, a head 64 KiB, 100 header fields. Not TLS, not
HTTP/2: behind a proxy, or for several processes, use gunicorn (``gthread`` workers) with
``mcp.wsgi_app()``.
"""

from __future__ import annotations

import errno
import heapq
import io
import itertools
import logging
import os
import re
import selectors
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import h11

from minimcp.jsonrpc import MCPError
from minimcp.server.lowlevel.workers import WorkerPool

logger = logging.getLogger("minimcp.server.httpd")

MAX_LINE = 8192
MAX_HEAD = 64 * 1024
MAX_HEADERS = 100
#: Empty lines skipped before a request line (RFC 9112 §2.2: a server SHOULD ignore at least one).
MAX_EMPTY_LINES = 8
#: An unread request body up to this size is skipped so the connection can carry the next request;
#: a larger one closes the connection instead.
MAX_DRAIN = 64 * 1024
#: How long, in total, a closing connection keeps reading what the client still sends.
LINGER = 2.0
#: Closing connections lingering at once; past it a connection closes without the lingering read.
MAX_LINGERING = 1024
#: Seconds a refused client is told to wait (``Retry-After``).
RETRY_AFTER = 1
#: How often, at most, a recurring event (a refusal, a shortage) is logged.
LOG_INTERVAL = 10.0
#: How long a worker that answered a request waits for the next one on the same connection before
#: handing the connection to the selector: a client sending requests back to back (an MCP client
#: in a session) then costs no handoff between threads, and an idle connection holds a thread no
#: longer. Only from a connection's second request on, so that many connections of one request
#: each (a flood, or short-lived clients) do not hold a thread each for the grace.
KEEP_ALIVE_GRACE = 0.05
#: How long accepting pauses when not even the reserved descriptor can be had back.
ACCEPT_PAUSE = 0.1
_ACCEPT_BATCH = 64
_RECV_SIZE = 65536
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_NO_BODY_STATUS = (204, 304)
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})
_STATUS = {400: "400 Bad Request", 408: "408 Request Timeout", 414: "414 URI Too Long",
           417: "417 Expectation Failed", 431: "431 Request Header Fields Too Large", 501: "501 Not Implemented",
           503: "503 Service Unavailable", 505: "505 HTTP Version Not Supported"}
#: Bytes that framing never holds (RFC 9110 §5.5 allows SP and HTAB, no other control, in a field
#: value); CR and LF are checked apart, as line ends.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: A method as gunicorn accepts one: an RFC 9110 token, upper case (methods are case-sensitive, and
#: a lower-case one is a front end's casefolding away from another), 3 to 20 characters, no ``#``.
_METHOD = re.compile(rb"[!$%&'*+\-.^_`|~0-9A-Z]{3,20}")
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
#: A chunk-size line without its CRLF (RFC 9112 §7.1.1): h11 takes anything after a ``;`` and
#: whitespace before the CRLF, which a strict front end reads as no chunk size at all.
_CHUNK_LINE = re.compile(rb"[0-9A-Fa-f]+(?:[ \t]*;[ \t]*" + _TOKEN
                         + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*")
#: Fields a trailer may not carry (RFC 9110 §6.5.1): they route, frame or authenticate the message,
#: and a front end that merges trailers into the head would act on them.
_FORBIDDEN_TRAILERS = frozenset({b"host", b"content-length", b"transfer-encoding", b"trailer", b"authorization", b"te"})



def _recv_ready(sock: socket.socket) -> bytes | None:
    """What a non-blocking socket the selector reported readable holds: ``None`` when nothing is there
    after all, ``b""`` when the peer closed or the connection failed."""
    try:
        return sock.recv(_RECV_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""

class BadRequest(Exception):
    """The bytes on the wire are not an HTTP request this server accepts; answered, then closed."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def _environ_key(name: bytes) -> str:
    """The environ key of a header field name as sent (``Mcp-Method`` -> ``HTTP_MCP_METHOD``).

    Clients repeat the same few names on every request, so keys are remembered (up to
    ``_MAX_KEYS`` of them); converting costs more than the rest of a header together.
    """
    if b"_" in name:  # it would alias another name once dashes become underscores
        raise BadRequest(_STATUS[400], f"malformed header name {name[:40]!r}")
    key = name.decode("ascii").upper().replace("-", "_")
    if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        key = "HTTP_" + key
    if len(_ENVIRON_KEYS) < _MAX_KEYS:
        _ENVIRON_KEYS[name] = key
    return key


#: Shared by every worker without a lock: a dict store is atomic, and two threads racing past the
#: cap add an entry or two more, which is harmless.
_ENVIRON_KEYS: dict[bytes, str] = {}
_MAX_KEYS = 512


class _Parser:
    """One request's bytes through h11, strict where h11 is lenient.

    h11 takes a bare LF for a line end in a head and in trailers, lets a bare CR or a NUL through
    in a chunk extension, and unfolds obsolete line folding; here these are refused (RFC 9112 allows
    the first two nowhere, and lets a server refuse the third), and a front end that splits lines only at
    CRLF would frame the same bytes differently (the desync that smuggles a second request). So every
    byte h11 consumes as framing (the head, chunk-size lines, the CRLF after chunk data, trailers) is
    checked before its event is used. ``_framing`` holds what was fed and not yet checked; it is kept
    while the head arrives and through a chunked body (a Content-Length body has no framing and is
    not copied), and is ``None`` otherwise.
    """

    __slots__ = ("h11", "started", "content_length", "headers", "_framing", "_empty_lines", "_held")

    def __init__(self, leftover: bytes = b"") -> None:
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.started = False  # a byte of the request itself (not an empty line before it) arrived
        self.content_length: int | None = None  # of the body, known with the head; None: chunked
        self.headers: dict[str, str] = {}  # the head's fields as environ keys and values
        self._framing: bytearray | None = bytearray()
        self._empty_lines = 0
        self._held = b""  # a CR that may start an empty line
        if leftover:
            self.feed(leftover)

    def feed(self, data: bytes) -> None:
        """Take bytes read from the client (``b""``: it closed its side)."""
        if not self.started and data:
            data = self._skip_empty_lines(data)
            if not data:
                return
            self.started = True
        if self._framing is not None:
            self._framing += data
        self.h11.receive_data(data)

    def _skip_empty_lines(self, data: bytes) -> bytes:
        data = self._held + data
        self._held = b""
        while data[:2] == b"\r\n":
            self._empty_lines += 1
            if self._empty_lines > MAX_EMPTY_LINES:
                raise BadRequest(_STATUS[400], "too many empty lines before the request line")
            data = data[2:]
        if data == b"\r":
            self._held, data = data, b""
        return data

    def leftover(self) -> bytes:
        """What the client sent past this request: the start of the next one (pipelining)."""
        return self._held + self.h11.trailing_data[0]

    def next_event(self) -> Any:
        """h11's next event (``h11.NEED_DATA`` when more bytes must come), its framing checked."""
        try:
            event = self.h11.next_event()
        except h11.RemoteProtocolError as exc:
            raise self._refusal(exc) from None
        if event is h11.NEED_DATA or self._framing is None:
            return event
        used = len(self._framing) - len(self.h11.trailing_data[0])
        framing = self._framing[:used]
        del self._framing[:used]
        kind = type(event)
        if kind is h11.Data:
            del framing[len(framing) - len(event.data):]  # a chunk's data follows its framing
        if not framing.count(b"\r") == framing.count(b"\n") == framing.count(b"\r\n"):
            raise BadRequest(_STATUS[400], "CR or LF in a request head or chunked framing, other than as a CRLF line end")
        if _CONTROL.search(framing):
            raise BadRequest(_STATUS[400], "a control character in a request head or chunked framing")
        if b"\n " in framing or b"\n\t" in framing:
            raise BadRequest(_STATUS[400], "obsolete line folding (a field line that starts with whitespace)")
        if kind is h11.Request:
            self._check_head(event, framing)
            if self.content_length is not None:
                self._framing = None
        elif kind is h11.Data:
            if event.chunk_start:
                self._check_chunk_line(framing)
        elif kind is h11.EndOfMessage:
            self._check_chunk_line(framing)
            for name, _ in event.headers:
                if name in _FORBIDDEN_TRAILERS:
                    raise BadRequest(_STATUS[400], f"a {name.decode()} field in the trailers")
            self._framing = None
        return event

    @staticmethod
    def _check_chunk_line(framing: bytearray) -> None:
        """The chunk-size line in ``framing`` (after the CRLF that ends the previous chunk's data,
        if any) is a size and well-formed extensions, nothing else."""
        start = 2 if framing[:2] == b"\r\n" else 0
        if not _CHUNK_LINE.fullmatch(framing, start, framing.find(b"\r\n", start)):
            raise BadRequest(_STATUS[400], "malformed chunk-size line (whitespace after the size, "
                                           "or an extension that is not name[=value])")

    def _refusal(self, exc: h11.RemoteProtocolError) -> BadRequest:
        status = exc.error_status_hint
        if status == 501:
            # h11's hint for a Transfer-Encoding other than one "chunked": chunked is then not the
            # final coding, and RFC 9112 section 6.3 says 400 (as gunicorn answers).
            status = 400
        if status == 431 and self._framing is not None and b"\n" not in self._framing[:MAX_LINE]:
            status = 414  # it is the request line that never ended
        return BadRequest(_STATUS.get(status, _STATUS[400]), str(exc))

    def _check_head(self, request: h11.Request, head: bytearray) -> None:
        """What RFC 9112 lets a server refuse and h11 accepts; ``head`` is the head as received."""
        if request.http_version not in (b"1.1", b"1.0"):
            raise BadRequest(_STATUS[505], "HTTP/1.0 and HTTP/1.1 only")
        if not _METHOD.fullmatch(request.method):
            raise BadRequest(_STATUS[400], "the method must be an upper-case token of 3 to 20 characters")
        self._check_content_length(head)
        if len(request.target) > MAX_LINE:
            raise BadRequest(_STATUS[414], "request target too long")
        fields = request.headers.raw_items()
        if len(fields) > MAX_HEADERS:
            raise BadRequest(_STATUS[431], "too many header fields")
        headers = self.headers
        for name, value in fields:
            if len(name) + len(value) + 2 > MAX_LINE:
                raise BadRequest(_STATUS[431], "header line too long")
            key = _ENVIRON_KEYS.get(name) or _environ_key(name)
            text = value.decode("latin-1")
            # h11 refused a second Host; a field of one value (Content-Type) may not repeat either,
            # and the others are joined.
            if key in headers:
                if key == "CONTENT_TYPE":
                    raise BadRequest(_STATUS[400], "more than one Content-Type field")
                headers[key] = headers[key] + "," + text
            else:
                headers[key] = text
        expect = headers.get("HTTP_EXPECT")
        if expect is not None and expect.lower() != "100-continue":
            raise BadRequest(_STATUS[417], "the only expectation understood is 100-continue")
        chunked = "HTTP_TRANSFER_ENCODING" in headers  # h11 accepts "chunked" only, once
        if chunked and "CONTENT_LENGTH" in headers:
            raise BadRequest(_STATUS[400], "both Content-Length and Transfer-Encoding")
        if chunked and request.http_version == b"1.0":
            raise BadRequest(_STATUS[400], "Transfer-Encoding in an HTTP/1.0 request")
        # h11 checked the length: digits, at most 20 of them; _check_content_length, that it came once.
        self.content_length = None if chunked else int(headers.get("CONTENT_LENGTH", 0))

    @staticmethod
    def _check_content_length(head: bytearray) -> None:
        """One Content-Length field holding one number. h11 merges repeats of one value (two fields,
        or the list ``5, 5``) into one; a front end that refuses them, or reads the first of
        two, frames the body differently, so both are refused, as gunicorn does."""
        lowered = head.lower()
        at = lowered.find(b"\ncontent-length:")
        if at < 0:
            return
        if lowered.find(b"\ncontent-length:", at + 1) >= 0:
            raise BadRequest(_STATUS[400], "more than one Content-Length field")
        if b"," in head[at:head.find(b"\r\n", at)]:
            raise BadRequest(_STATUS[400], "a list in the Content-Length field")


class _Connection:
    """A client connection. Owned by the loop while parked (idle, or its head still arriving), by one
    worker while a request runs; ``parked`` and ``deadline`` are the loop's (a worker hands the
    connection back through ``WSGIServer._hand_back``, never touching the loop's state)."""

    __slots__ = ("sock", "address", "parser", "parked", "deadline", "served", "keep")

    def __init__(self, sock: socket.socket, address: tuple[Any, ...], deadline: float) -> None:
        self.sock = sock
        self.address = address
        self.parser = _Parser()
        self.parked = False
        self.deadline = deadline
        self.served = 0  # requests answered: the worker's (see KEEP_ALIVE_GRACE)
        self.keep = False  # whether the worker's last exchange left it reusable: the worker's


class _Lingering:
    """A closing socket whose unread input the loop discards until EOF, ``MAX_DRAIN`` bytes or ``deadline``."""

    __slots__ = ("sock", "deadline", "left")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.left = MAX_DRAIN


class _Tally:
    """A recurring event (a refused connection, a descriptor shortage), logged at most once per
    ``LOG_INTERVAL`` with a count, so that a flood shows in the log without filling it. Used by the
    loop thread only."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._count = 0
        self._logged = -LOG_INTERVAL

    def add(self, detail: object = "") -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._logged >= LOG_INTERVAL:
            logger.warning("%s (%d since the last report)%s", self.what, self._count, f": {detail}" if detail else "")
            self._count = 0
            self._logged = now


class _Body(io.RawIOBase):
    """``wsgi.input``: the request body and nothing past it, so the next request stays intact.

    Bytes come from the parser, which reads the socket only when the app asks for more, within
    ``deadline``. The first read sends ``100 Continue`` when the client asked for it, so a request
    refused unread costs no upload. ``remaining`` is the unread part of a Content-Length body, or
    ``None`` for a chunked one.
    """

    def __init__(self, conn: _Connection, deadline: float, send_timeout: float) -> None:
        super().__init__()
        self._conn = conn
        self._deadline = deadline
        self._send_timeout = send_timeout
        self.remaining = conn.parser.content_length
        self._pending = memoryview(b"")
        self._done = False
        self._failed = False  # a read raised: where the body ends is unknown
        self._continue_sent = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        try:
            if size is None or size < 0:
                return b"".join(iter(lambda: self._read_some(_RECV_SIZE), b""))
            return self._read_some(size)
        except Exception:
            self._failed = True
            raise

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        # Bodies here are JSON; a line reader needs no speed, only correctness.
        line = bytearray()
        while size is None or size < 0 or len(line) < size:
            byte = self.read(1)
            if not byte:
                break
            line += byte
            if byte == b"\n":
                break
        return bytes(line)

    def _read_some(self, size: int) -> bytes:
        while not self._pending:
            if self._done or size == 0:
                return b""
            event = self._next_event()
            if type(event) is h11.Data:
                self._pending = memoryview(event.data)
                if self.remaining is not None:
                    self.remaining -= len(event.data)
            else:  # EndOfMessage
                self._done = True
        data = bytes(self._pending[:size])
        self._pending = self._pending[size:]
        return data

    def _next_event(self) -> Any:
        parser = self._conn.parser
        sock = self._conn.sock
        if not self._continue_sent:
            self._continue_sent = True
            if parser.h11.they_are_waiting_for_100_continue:
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        while True:
            event = parser.next_event()
            if event is not h11.NEED_DATA:
                return event
            left = self._deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                sock.settimeout(left)
                data = sock.recv(_RECV_SIZE)
            except TimeoutError:
                raise BadRequest(_STATUS[408], "the request body did not arrive in time") from None
            finally:
                sock.settimeout(self._send_timeout)
            if not data:
                raise ConnectionError("client closed the connection mid-body")
            parser.feed(data)

    def waiting_for_continue(self) -> bool:
        return not self._continue_sent and self._conn.parser.h11.they_are_waiting_for_100_continue

    def can_drain(self) -> bool:
        """Whether what the app left unread may be skipped for the next request: not more than
        ``MAX_DRAIN`` bytes, not after a failed read (where the body ends is unknown), and not while
        the client still waits for ``100 Continue`` (its body may never come)."""
        if self._done:
            return True
        if self._failed or self.waiting_for_continue():
            return False
        return self.remaining is None or self.remaining <= MAX_DRAIN

    def drain(self) -> bool:
        """Skip what the app left unread; ``False`` when the connection must close instead."""
        if not self.can_drain():
            return False
        skipped = 0
        try:
            while not self._done:
                skipped += len(self._read_some(MAX_DRAIN))
                if skipped > MAX_DRAIN:
                    return False
        except (BadRequest, OSError):
            return False  # the response is out already: a second one would answer no request
        return True


class _Date:
    """The ``Date`` header, formatted once per second rather than once per response."""

    def __init__(self) -> None:
        self._second = 0
        self._value = b""

    def header(self) -> bytes:
        now = int(time.time())
        if now != self._second:  # a benign race: two threads may both reformat the same second
            self._value = b"Date: " + formatdate(now, usegmt=True).encode() + b"\r\n"
            self._second = now
        return self._value


class WSGIServer:
    """Serve ``app`` on ``host:port`` (port 0 picks a free one; see ``port``) until ``shutdown()``.

    ``serve_forever()`` runs the loop in the calling thread; requests run on up to
    ``max_connections`` worker threads, started on demand. ``max_connections_per_peer=None`` lifts
    the per-address cap (behind a proxy every connection comes from the proxy's address).

    At ``max_connections`` a newcomer closes the longest-idle keep-alive connection (parked, with no
    byte of a next request): such a connection holds no request, so closing it loses nothing, and
    thousands of them held open from a few addresses cannot lock every other client out. Only when
    every connection holds a request is the newcomer answered ``503`` (a connection whose worker
    waits ``KEEP_ALIVE_GRACE`` for its next request counts as holding one meanwhile).

    Threads: the loop alone touches the selector, ``_conns``, ``_resting``, ``_per_peer``, ``_timers``
    and ``_lingering``. ``_handback_lock`` guards ``_handback`` (connections workers return),
    ``_wake_pending`` and ``_loop_done``; ``_busy_lock`` (with ``_idle``) guards ``_busy``, the
    requests running on workers, which ``shutdown()`` waits for.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], host: str = "127.0.0.1", port: int = 0, *,
                 max_connections: int = 4096, max_connections_per_peer: int | None = 256,
                 idle_timeout: float = 75.0, header_timeout: float = 10.0, body_timeout: float = 30.0) -> None:
        self.app = app
        self.max_connections = max_connections
        self.max_connections_per_peer = max_connections_per_peer
        self.idle_timeout = idle_timeout
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, port))
        self._listener.listen(1024)
        self._listener.setblocking(False)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._serving = False
        self._pool = WorkerPool(max_connections, wait_timeout=0.0, thread_name="minimcp-httpd")
        self._handback_lock = threading.Lock()
        self._handback: list[tuple[_Connection, bool]] = []
        self._wake_pending = False
        self._loop_done = False
        self._busy_lock = threading.Lock()
        self._idle = threading.Condition(self._busy_lock)
        self._busy = 0
        self._selector: selectors.BaseSelector | None = None
        self._conns: set[_Connection] = set()
        # The parked connections holding no request, in the order they became so: the first one has
        # been idle longest (a dict keeps insertion order; re-parking moves a connection to the end).
        self._resting: dict[_Connection, None] = {}
        self._per_peer: Counter[Any] = Counter()
        self._lingering: set[_Lingering] = set()
        self._timers: list[tuple[float, int, Any]] = []  # (deadline, tie-break, connection or lingering)
        self._sequence = itertools.count()
        self._accept_resumes: float | None = None  # accepting paused until then (no descriptor left)
        self._reserve: int | None = os.open(os.devnull, os.O_RDONLY)  # spent to answer when none is left
        self._refusals = _Tally("refusing connections")
        self._evictions = _Tally(f"closing the longest-idle connection for a new one ({max_connections} connections open)")
        self._shortage = _Tally("out of file descriptors: answering new connections 503")
        self._date = _Date()
        self._base_environ = {
            "SERVER_NAME": host, "SERVER_PORT": str(self.port), "SCRIPT_NAME": "",
            "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "wsgi.input_terminated": True,
        }

    # --- lifecycle ---------------------------------------------------------------------------------
    def serve_forever(self) -> None:
        self._serving = True
        try:
            with selectors.DefaultSelector() as selector:
                self._selector = selector
                selector.register(self._listener, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                try:
                    self._loop(selector)
                finally:
                    self._close_all()
        finally:
            self._stopped.set()

    def run(self) -> None:
        """``serve_forever`` until Ctrl-C (``KeyboardInterrupt``), then ``shutdown``."""
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection, and wait (up to ``timeout``) for running requests.

        Idempotent; a server whose ``serve_forever`` never ran shuts down at once.
        """
        if self._stopping.is_set():
            return
        deadline = time.monotonic() + timeout
        self._stopping.set()
        self._wake()
        if self._serving:
            self._stopped.wait(timeout)
        with self._idle:
            while self._busy and self._idle.wait(max(0.0, deadline - time.monotonic())):
                pass
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
        self._pool.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # the buffer is full (a wake is pending anyway) or the server is closed

    # --- the loop ----------------------------------------------------------------------------------
    def _loop(self, selector: selectors.BaseSelector) -> None:
        while not self._stopping.is_set():
            now = time.monotonic()
            wait = self._timers[0][0] - now if self._timers else None
            if self._accept_resumes is not None:
                wait = min(wait if wait is not None else ACCEPT_PAUSE, self._accept_resumes - now)
            for key, _ in selector.select(None if wait is None else max(0.0, wait)):
                owner = key.data
                if type(owner) is _Connection:
                    self._read_head(owner)
                elif type(owner) is _Lingering:
                    self._discard_input(owner)
                elif key.fileobj is self._listener:
                    self._accept()
                else:
                    self._take_back()
            self._expire(time.monotonic())

    def _accept(self) -> None:
        for _ in range(_ACCEPT_BATCH):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_DESCRIPTORS:
                    self._out_of_descriptors()
                else:
                    self._refusals.add(f"accept failed: {exc}")
                return
            peer = address[0]
            if self.max_connections_per_peer is not None and self._per_peer[peer] >= self.max_connections_per_peer:
                self._refuse(sock, f"{peer} has {self._per_peer[peer]} connections open")
            elif len(self._conns) >= self.max_connections and not self._make_room():
                self._refuse(sock, f"{len(self._conns)} connections are open, each with a request")
            else:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn = _Connection(sock, address, time.monotonic() + self.header_timeout)
                self._conns.add(conn)
                self._per_peer[peer] += 1
                self._park(conn)

    def _make_room(self) -> bool:
        """Close the longest-idle connection for a newcomer; ``False`` when every one holds a request.

        A connection whose next request is already in its socket is not idle: its bytes are read
        first (it moves to the end of the order, or leaves it with a request begun). Connections
        workers have handed back count too, so they are taken back first.
        """
        self._take_back()
        for _ in range(len(self._resting)):
            conn = next(iter(self._resting))
            try:
                pending = conn.sock.recv(1, socket.MSG_PEEK)
            except OSError:  # nothing to read (or the connection failed): it is idle
                pending = b""
            if pending:
                self._read_head(conn)
                if conn in self._resting:  # only empty lines came: it is the youngest now
                    del self._resting[conn]
                    self._resting[conn] = None
                continue
            self._evictions.add()
            self._unpark(conn)
            self._close_connection(conn)
            return True
        return False

    def _refuse(self, sock: socket.socket, reason: str) -> None:
        self._refusals.add(reason)
        sock.setblocking(False)
        try:
            sock.send(self._error_bytes(_STATUS[503], "Too many connections; try again later"))
        except OSError:
            pass
        self._linger(sock)

    def _out_of_descriptors(self) -> None:
        """``accept`` failed for want of a descriptor, and the client waits in the backlog. Spend the
        reserved descriptor to answer it 503 and close it (without a lingering read: no descriptor to
        spare), then take the reserve back; when even that fails, pause accepting for a moment rather
        than spin on a listener that stays readable."""
        self._shortage.add()
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
            try:
                sock, _ = self._listener.accept()
            except OSError:
                pass
            else:
                sock.setblocking(False)
                try:
                    sock.send(self._error_bytes(_STATUS[503], "Out of resources; try again later"))
                    sock.recv(_RECV_SIZE)  # what already arrived, so the close does not reset the answer
                except OSError:
                    pass
                sock.close()
        try:
            self._reserve = os.open(os.devnull, os.O_RDONLY)
        except OSError:
            assert self._selector is not None
            self._selector.unregister(self._listener)
            self._accept_resumes = time.monotonic() + ACCEPT_PAUSE

    def _park(self, conn: _Connection) -> None:
        """Wait in the selector for the connection's next bytes, until ``conn.deadline``."""
        assert self._selector is not None
        conn.parked = True
        if not conn.parser.started:
            self._resting[conn] = None
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        self._add_timer(conn)

    def _add_timer(self, owner: _Connection | _Lingering) -> None:
        heapq.heappush(self._timers, (owner.deadline, next(self._sequence), owner))
        if len(self._timers) > 2 * (len(self._conns) + len(self._lingering)) + 1024:
            # Entries whose owner moved on are dropped when due; rebuild before they pile up.
            self._timers = [entry for entry in self._timers if self._timer_is_live(entry)]
            heapq.heapify(self._timers)

    @staticmethod
    def _timer_is_live(entry: tuple[float, int, Any]) -> bool:
        deadline, _, owner = entry
        return owner.deadline == deadline and (type(owner) is _Lingering or owner.parked)

    def _expire(self, now: float) -> None:
        if self._accept_resumes is not None and now >= self._accept_resumes:
            assert self._selector is not None
            self._accept_resumes = None
            self._selector.register(self._listener, selectors.EVENT_READ)
        while self._timers and self._timers[0][0] <= now:
            entry = heapq.heappop(self._timers)
            if not self._timer_is_live(entry):
                continue
            owner = entry[2]
            if type(owner) is _Lingering:
                self._end_lingering(owner)
            elif owner.parser.started:  # a head began and did not finish in time
                self._unpark(owner)
                self._send_now(owner.sock, _STATUS[408], "The request head did not arrive in time")
                self._close_connection(owner)
            else:  # idle: close quietly
                self._unpark(owner)
                self._close_connection(owner)

    def _unpark(self, conn: _Connection) -> None:
        assert self._selector is not None
        self._selector.unregister(conn.sock)
        conn.parked = False
        self._resting.pop(conn, None)

    def _read_head(self, conn: _Connection) -> None:
        """The loop's part of a request: take what arrived, and hand a complete head to a worker."""
        data = _recv_ready(conn.sock)
        if data is None:
            return
        if not data:  # the client closed (an unfinished head is abandoned with it)
            self._unpark(conn)
            self._close_connection(conn)
            return
        parser = conn.parser
        started = parser.started
        try:
            parser.feed(data)
            request = parser.next_event()
        except BadRequest as bad:
            self._unpark(conn)
            self._send_now(conn.sock, bad.status, str(bad))
            self._close_connection(conn)
            return
        if request is h11.NEED_DATA:
            if parser.started and not started:  # the head's clock starts with its first byte
                del self._resting[conn]
                conn.deadline = min(conn.deadline, time.monotonic() + self.header_timeout)
                self._add_timer(conn)
            return
        self._unpark(conn)
        self._start(conn, request)

    def _start(self, conn: _Connection, request: h11.Request) -> None:
        with self._busy_lock:
            self._busy += 1
        try:
            self._pool.submit(lambda: self._serve(conn, request), then=lambda: self._finish(conn))
        except (MCPError, RuntimeError) as exc:  # every worker busy, or the system refused a thread
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()
            self._refusals.add(exc)
            self._send_now(conn.sock, _STATUS[503], "Too many requests at once; try again later")
            self._close_connection(conn)

    def _take_back(self) -> None:
        """Connections that workers finished with: park the kept-alive ones, close the others."""
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass
        with self._handback_lock:
            returned, self._handback = self._handback, []
            self._wake_pending = False
        now = time.monotonic()
        for conn, keep in returned:
            if not keep:
                self._close_connection(conn)
                continue
            conn.sock.setblocking(False)
            timeout = self.header_timeout if conn.parser.started else self.idle_timeout
            conn.deadline = now + timeout
            self._park(conn)

    def _close_connection(self, conn: _Connection) -> None:
        self._conns.discard(conn)
        peer = conn.address[0]
        self._per_peer[peer] -= 1
        if self._per_peer[peer] <= 0:
            del self._per_peer[peer]
        self._linger(conn.sock)

    def _linger(self, sock: socket.socket) -> None:
        """Close ``sock`` after a lingering read: closing with unread input makes the kernel send a
        reset, which can destroy the response the client has not read yet (a refused body, a 503).
        The selector does the reading, for ``LINGER`` seconds and ``MAX_DRAIN`` bytes at most."""
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self._lingering) >= MAX_LINGERING or self._stopping.is_set():
            sock.close()
            return
        assert self._selector is not None
        sock.setblocking(False)
        lingering = _Lingering(sock, time.monotonic() + LINGER)
        self._lingering.add(lingering)
        self._selector.register(sock, selectors.EVENT_READ, lingering)
        self._add_timer(lingering)

    def _discard_input(self, lingering: _Lingering) -> None:
        data = _recv_ready(lingering.sock)
        if data is None:
            return
        lingering.left -= len(data)
        if not data or lingering.left <= 0:
            self._end_lingering(lingering)

    def _end_lingering(self, lingering: _Lingering) -> None:
        assert self._selector is not None
        self._lingering.discard(lingering)
        lingering.deadline = -1.0  # its timer entry, if any, is stale now
        self._selector.unregister(lingering.sock)
        lingering.sock.close()

    def _close_all(self) -> None:
        """The loop's last act: close what it owns and cut the running requests short."""
        with self._handback_lock:
            self._loop_done = True
            returned, self._handback = self._handback, []
        for conn, _ in returned:
            conn.sock.close()
            self._conns.discard(conn)
        for conn in self._conns:
            if conn.parked:
                conn.sock.close()
            else:  # a worker has it: make its next read or send fail; it closes the socket
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for lingering in self._lingering:
            lingering.sock.close()
        self._conns.clear()
        self._resting.clear()
        self._lingering.clear()
        self._timers.clear()
        self._listener.close()

    def _send_now(self, sock: socket.socket, status: str, text: str) -> None:
        """An error answer from the loop: one non-blocking send (a new connection's send buffer is
        empty, and an answer this small fits; if it does not, the client was not reading anyway)."""
        try:
            sock.send(self._error_bytes(status, text))
        except OSError:
            pass

    # --- a worker's part ---------------------------------------------------------------------------
    def _hand_back(self, conn: _Connection, keep: bool) -> None:
        with self._handback_lock:
            if not self._loop_done:
                self._handback.append((conn, keep))
                wake, self._wake_pending = not self._wake_pending, True
            else:
                wake = False
                conn.sock.close()
        if wake:
            self._wake()

    def _serve(self, conn: _Connection, request: h11.Request) -> None:
        """Worker: answer ``request``, and the requests already received after it (``_finish`` then
        hands the connection back to the loop)."""
        keep = False
        try:
            conn.sock.settimeout(self.idle_timeout)
            while True:
                keep = self._exchange(conn, request) and not self._stopping.is_set()
                if not keep:
                    break
                conn.served += 1
                conn.parser = _Parser(conn.parser.leftover())
                request = conn.parser.next_event()
                if request is h11.NEED_DATA and not conn.parser.started and conn.served > 1:
                    request = self._next_request_soon(conn)
                if request is h11.NEED_DATA:
                    break  # the loop waits for the rest (a started head, within header_timeout)
        except BadRequest as bad:  # the next pipelined head
            keep = False
            self._send_error(conn.sock, bad.status, str(bad))
        except (OSError, ValueError):
            keep = False  # the client went away or timed out; nothing is left to answer
        except Exception:  # a fault of this server's own: end the connection, keep serving the others
            keep = False
            logger.exception("connection from %s failed", conn.address[0])
        finally:
            conn.keep = keep

    def _finish(self, conn: _Connection) -> None:
        """Worker, after ``_serve``, once the pool counts it free: only then may the connection's
        next request reach the loop, or that request would find every worker still taken and be
        refused with 503 (at ``max_connections``)."""
        self._hand_back(conn, conn.keep)
        with self._idle:
            self._busy -= 1
            if not self._busy:
                self._idle.notify_all()

    def _next_request_soon(self, conn: _Connection) -> Any:
        """The next request if its bytes arrive within ``KEEP_ALIVE_GRACE``, else ``h11.NEED_DATA``
        (nothing came, or only part of a head); ``ConnectionError`` when the client closed."""
        conn.sock.settimeout(KEEP_ALIVE_GRACE)
        try:
            data = conn.sock.recv(_RECV_SIZE)
        except TimeoutError:
            return h11.NEED_DATA
        finally:
            conn.sock.settimeout(self.idle_timeout)
        if not data:
            raise ConnectionError("the client closed the connection")
        conn.parser.feed(data)
        return conn.parser.next_event()

    def _exchange(self, conn: _Connection, request: h11.Request) -> bool:
        """Serve one request; ``True`` when the connection may carry another."""
        try:
            environ = self._environ(request, conn.parser.headers, conn.address)
        except BadRequest as bad:
            self._send_error(conn.sock, bad.status, str(bad))
            return False
        body = _Body(conn, time.monotonic() + self.body_timeout, self.idle_timeout)
        environ["wsgi.input"] = body
        keep = self._respond(conn.sock, environ, self._wants_keep_alive(environ))
        return keep and body.drain()

    def _environ(self, request: h11.Request, headers: dict[str, str], address: tuple[Any, ...]) -> dict[str, Any]:
        environ = dict(self._base_environ)
        target = request.target.decode("ascii")  # h11 allows only visible ASCII in it
        authority = None
        if target[0] == "/":
            path, _, query = target.partition("?")
        elif target == "*" and request.method == b"OPTIONS":
            path, query = "*", ""
        elif target[:7].lower() == "http://" or target[:8].lower() == "https://":
            # Absolute form: RFC 9112 §3.2.2 says the target's authority, not the Host field, names the host.
            parts = urlsplit(target)
            if not parts.netloc or "@" in parts.netloc:
                raise BadRequest(_STATUS[400], "absolute-form target without a host, or with user info")
            authority, path, query = parts.netloc, parts.path or "/", parts.query
        else:
            raise BadRequest(_STATUS[400], "malformed request target")
        environ.update({
            "REQUEST_METHOD": request.method.decode("ascii"),
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"), "QUERY_STRING": query,
            "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
            "REMOTE_ADDR": str(address[0]), "REMOTE_PORT": str(address[1]),
        })
        environ.update(headers)
        if authority is not None:
            environ["HTTP_HOST"] = authority
        return environ

    @staticmethod
    def _wants_keep_alive(environ: dict[str, Any]) -> bool:
        connection = environ.get("HTTP_CONNECTION", "").lower()
        if environ["SERVER_PROTOCOL"] == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    def _respond(self, sock: socket.socket, environ: dict[str, Any], keep: bool) -> bool:
        """Run the app and send what it answers; ``True`` when the connection may stay open."""
        response = _Response(self, sock, environ, keep)
        try:
            result = self.app(environ, response.start_response)
        except Exception:
            return self._failed(sock, response, "before answering")
        try:
            for chunk in result:
                if chunk:
                    response.write(chunk)
            response.finish()
        except OSError:
            return False  # the client went away mid-response
        except Exception:
            return self._failed(sock, response, "while answering")
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    logger.exception("the WSGI app's response failed to close")
                    response.keep = False
        return response.keep

    def _failed(self, sock: socket.socket, response: _Response, stage: str) -> bool:
        """Answer, if nothing was sent yet, the exception the app let through: a malformed body that
        reached it through ``wsgi.input`` is the client's error, anything else 500 (and logged).
        The connection closes either way."""
        bad = sys.exc_info()[1]
        if isinstance(bad, BadRequest):
            status, text = bad.status, str(bad)
        else:
            logger.exception("the WSGI app failed %s", stage)
            status, text = "500 Internal Server Error", "Internal Server Error"
        if not response.started:
            self._send_error(sock, status, text)
        return False

    def _send_error(self, sock: socket.socket, status: str, text: str) -> None:
        try:
            sock.sendall(self._error_bytes(status, text))
        except OSError:
            pass

    def _error_bytes(self, status: str, text: str) -> bytes:
        body = text.encode() + b"\n"
        retry = f"Retry-After: {RETRY_AFTER}\r\n" if status.startswith("503") else ""
        return (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                f"{retry}Connection: close\r\n".encode() + self._date.header() + b"\r\n" + body)


class _Response:
    """One response in progress: the status and headers are sent with the first body bytes, so a
    small answer leaves in one packet; later chunks go out as soon as the app yields them."""

    def __init__(self, server: WSGIServer, sock: socket.socket, environ: dict[str, Any], keep: bool) -> None:
        self._server = server
        self._sock = sock
        self._head_only = environ["REQUEST_METHOD"] == "HEAD"
        self._body: _Body = environ["wsgi.input"]  # taken before the app may replace it
        self._version = environ["SERVER_PROTOCOL"]
        self.keep = keep
        self.started = False
        self._status: str | None = None
        self._headers: list[tuple[str, str]] = []
        self._chunked = False
        self._no_body = False

    def start_response(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
        if exc_info is not None:
            if self.started:
                raise exc_info[1].with_traceback(exc_info[2])
        elif self._status is not None:
            raise AssertionError("start_response called twice without exc_info")
        self._status = status
        self._headers = headers
        return self.write

    def _head(self) -> bytes:
        if self._status is None:
            raise AssertionError("the WSGI app sent a body before calling start_response")
        code = int(self._status[:3])
        lines = [f"HTTP/1.1 {self._status}\r\n"]
        has_length = False
        for name, value in self._headers:
            lower = name.lower()
            if lower in _HOP_BY_HOP:
                if lower == "connection" and "close" in value.lower():
                    self.keep = False
                continue
            has_length = has_length or lower == "content-length"
            lines.append(f"{name}: {value}\r\n")
        self._no_body = self._head_only or code < 200 or code in _NO_BODY_STATUS
        if not has_length and not self._no_body:
            if self._version == "HTTP/1.1":
                self._chunked = True
                lines.append("Transfer-Encoding: chunked\r\n")
            else:
                self.keep = False  # an HTTP/1.0 body without a length ends when the connection does
        if self.keep and not self._body.can_drain():
            self.keep = False  # announce it: the unread request body will not be skipped
        if not self.keep:
            lines.append("Connection: close\r\n")
        elif self._version == "HTTP/1.0":
            lines.append("Connection: keep-alive\r\n")
        return "".join(lines).encode("latin-1") + self._server._date.header() + b"\r\n"

    def write(self, data: bytes) -> None:
        head = b""
        if not self.started:
            head = self._head()
            self.started = True
        if self._no_body:
            if head:
                self._sock.sendall(head)
            return
        if self._chunked and data:  # an empty chunk would be the last one
            data = b"%x\r\n%s\r\n" % (len(data), data)
        if head or data:
            self._sock.sendall(head + data)

    def finish(self) -> None:
        head = b"" if self.started else self._head()
        self.started = True
        tail = b"0\r\n\r\n" if self._chunked else b""
        if head or tail:
            self._sock.sendall(head + tail)
