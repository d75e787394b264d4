"""The WSGI bridge: one parsed request through a WSGI app and its answer onto a blocking socket.

The request's environ is built from the parsed head; ``wsgi.input`` reads the body from the
parser, and the socket only as the app asks for more; the response is framed by the app's
Content-Length, else chunked (HTTP/1.1) or by closing (HTTP/1.0). Nothing here knows the
connection loop: ``WSGIBridge.exchange`` answers one request and says whether the connection may
carry another.
"""

from __future__ import annotations

import io
import logging
import socket
import sys
import time
from collections.abc import Callable, Iterable
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from minimcp.httpd.limits import KEEP_ALIVE_GRACE, MAX_DRAIN, RECV_SIZE, RETRY_AFTER, STATUS
from minimcp.httpd.parsing import NEED_DATA, BadRequest, Event, Head, Parser
from minimcp.httpd.sockets import recv_within

logger = logging.getLogger("minimcp.httpd")

_NO_BODY_STATUS = (204, 304)
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})


class Body(io.RawIOBase):
    """``wsgi.input``: the request body and nothing past it, so the next request stays intact.

    Bytes come from the parser, which reads the socket only when the app asks for more, within
    ``deadline``. The first read sends ``100 Continue`` when the client asked for it, so a request
    refused unread costs no upload. ``remaining`` is the unread part of a Content-Length body, or
    ``None`` for a chunked one.
    """

    def __init__(self, parser: Parser, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._parser = parser
        self._sock = sock
        self._deadline = deadline
        self.remaining = parser.content_length
        self._pending = memoryview(b"")
        self._done = False
        self._failed = False  # a read raised: where the body ends is unknown
        self._continue_sent = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        try:
            if size is None or size < 0:
                return b"".join(iter(lambda: self._read_some(RECV_SIZE), b""))
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
            if type(event) is bytes:
                if self.remaining is not None:
                    self.remaining -= len(event)
                if 0 < len(event) <= size:
                    return event  # the whole piece: no view of it, no copy
                self._pending = memoryview(event)
            else:  # END
                self._done = True
        data = bytes(self._pending[:size])
        self._pending = self._pending[size:]
        return data

    def _next_event(self) -> Event:
        parser = self._parser
        sock = self._sock
        if not self._continue_sent:
            self._continue_sent = True
            if parser.waiting_for_continue:
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        while True:
            event = parser.next_event()
            if event is not NEED_DATA:
                return event
            left = self._deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                data = recv_within(sock, left, then=KEEP_ALIVE_GRACE)
            except TimeoutError:
                raise BadRequest(STATUS[408], "the request body did not arrive in time") from None
            if not data:
                raise ConnectionError("client closed the connection mid-body")
            parser.feed(data)

    def waiting_for_continue(self) -> bool:
        return not self._continue_sent and self._parser.waiting_for_continue

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
        if self.remaining == 0:
            return True  # a Content-Length body read to its end: only END is left, and it carries nothing
        skipped = 0
        try:
            while not self._done:
                skipped += len(self._read_some(MAX_DRAIN))
                if skipped > MAX_DRAIN:
                    return False
        except (BadRequest, OSError):
            return False  # the response is out already: a second one would answer no request
        return True


class Date:
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


class WSGIBridge:
    """Serves one request at a time of any connection, on the calling (worker) thread; holds no
    per-connection state, so every worker shares one."""

    def __init__(self, app: Callable[..., Iterable[bytes]], host: str, port: int, *,
                 body_timeout: float, refusal: Callable[[dict[str, Any]], str | None] | None = None) -> None:
        self.app = app
        #: Why a request is answered 503 before the app sees it (``None``: it is not), asked on the worker.
        self.refusal = refusal
        self.body_timeout = body_timeout
        self.date = Date()
        self._base_environ = {
            "SERVER_NAME": host, "SERVER_PORT": str(port), "SCRIPT_NAME": "",
            "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "wsgi.input_terminated": True,
        }

    def exchange(self, sock: socket.socket, parser: Parser, request: Head, address: tuple[Any, ...]) -> bool:
        """Serve one request; ``True`` when the connection may carry another."""
        try:
            environ = self._environ(request, parser.headers, address)
        except BadRequest as bad:
            self.send_error(sock, bad.status, str(bad))
            return False
        refused = self.refusal(environ) if self.refusal is not None else None
        if refused is not None:
            self.send_error(sock, STATUS[503], refused)
            return False
        body = Body(parser, sock, time.monotonic() + self.body_timeout)
        environ["wsgi.input"] = body
        environ["minimcp.httpd.socket"] = sock  # as gunicorn's "gunicorn.socket": for watching a hang-up (hangups)
        keep = self._respond(sock, environ, self._wants_keep_alive(environ))
        return keep and body.drain()

    def _environ(self, request: Head, headers: dict[str, str], address: tuple[Any, ...]) -> dict[str, Any]:
        environ = dict(self._base_environ)
        target = request.target.decode("ascii")  # either parser lets only visible ASCII through
        authority = None
        if target[0] == "/":
            path, _, query = target.partition("?")
        elif target == "*" and request.method == b"OPTIONS":
            path, query = "*", ""
        elif target[:7].lower() == "http://" or target[:8].lower() == "https://":
            # Absolute form: RFC 9112 §3.2.2 says the target's authority, not the Host field, names the host.
            parts = urlsplit(target)
            if not parts.netloc or "@" in parts.netloc:
                raise BadRequest(STATUS[400], "absolute-form target without a host, or with user info")
            authority, path, query = parts.netloc, parts.path or "/", parts.query
        else:
            raise BadRequest(STATUS[400], "malformed request target")
        environ["REQUEST_METHOD"] = request.method.decode("ascii")
        # Without a %-escape the path's bytes are its ASCII characters, and latin-1 reads them back as is.
        environ["PATH_INFO"] = unquote_to_bytes(path).decode("latin-1") if "%" in path else path
        environ["QUERY_STRING"] = query
        environ["SERVER_PROTOCOL"] = "HTTP/" + request.http_version.decode("ascii")
        environ["REMOTE_ADDR"] = str(address[0])
        environ["REMOTE_PORT"] = str(address[1])
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
        response = _Response(self.date, sock, environ, keep)
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
            status, text = STATUS[500], "Internal Server Error"
        if not response.started:
            self.send_error(sock, status, text)
        return False

    def send_error(self, sock: socket.socket, status: str, text: str) -> None:
        try:
            sock.sendall(self.error_bytes(status, text))
        except OSError:
            pass

    def error_bytes(self, status: str, text: str) -> bytes:
        body = text.encode() + b"\n"
        retry = f"Retry-After: {RETRY_AFTER}\r\n" if status.startswith("503") else ""
        return (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                f"{retry}Connection: close\r\n".encode() + self.date.header() + b"\r\n" + body)


class _Response:
    """One response in progress: the status and headers are sent with the first body bytes, so a
    small answer leaves in one packet; later chunks go out as soon as the app yields them."""

    def __init__(self, date: Date, sock: socket.socket, environ: dict[str, Any], keep: bool) -> None:
        self._date = date
        self._sock = sock
        self._head_only = environ["REQUEST_METHOD"] == "HEAD"
        self._body: Body = environ["wsgi.input"]  # taken before the app may replace it
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
        return "".join(lines).encode("latin-1") + self._date.header() + b"\r\n"

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
