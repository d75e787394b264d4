"""A threaded HTTP/1.1 server for WSGI apps that keeps connections alive.

Why minimcp has its own: werkzeug's development server answers every request with
``Connection: close`` (``http.server`` cannot drain an unread body before the next request line),
so each MCP request paid a TCP handshake and a fresh thread. MCP clients hold one connection and
send request after request on it; this server keeps the connection, and its thread, for the next
one. It is what ``mcp.run(transport="streamable-http")`` uses; any WSGI app can run on it.

One thread per connection, at most ``max_connections`` of them: a connection beyond the cap is
answered 503 and closed. A connection idle for ``idle_timeout`` seconds between requests (or a
client that stalls mid-request, or stops reading a response) is closed.

What it speaks: HTTP/1.0 and 1.1; request bodies framed by Content-Length or chunked;
``Expect: 100-continue``; responses framed by the app's Content-Length, else chunked (HTTP/1.1)
or closed (HTTP/1.0), each chunk sent as soon as the app yields it, which is what SSE needs.
Limits: request line and each header line 8 KiB, 100 header fields. Not TLS, not HTTP/2: behind a
proxy, or for several processes, use gunicorn (``gthread`` workers) with ``mcp.wsgi_app()``.
"""

from __future__ import annotations

import io
import logging
import re
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote_to_bytes

logger = logging.getLogger("minimcp.server.httpd")

MAX_LINE = 8192
MAX_HEADERS = 100
#: An unread request body up to this size is skipped so the connection can carry the next request;
#: a larger one closes the connection instead.
MAX_DRAIN = 64 * 1024
#: How long a closing connection keeps reading what the client still sends (see ``WSGIServer._close``).
LINGER = 1.0
_NO_BODY_STATUS = (204, 304)
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})


def _environ_key(name: str) -> str:
    """The environ key of a header field name (``Mcp-Method`` -> ``HTTP_MCP_METHOD``).

    Clients repeat the same few names on every request, so keys are remembered (up to
    ``_MAX_KEYS`` of them); converting costs more than the rest of a header line together.
    """
    if _TOKEN.fullmatch(name) is None:
        # A token (RFC 9110 §5.6.2) without "_", which would alias another name once dashes
        # become underscores.
        raise BadRequest("400 Bad Request", f"malformed header line {name[:40]!r}")
    key = name.upper().replace("-", "_")
    if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        key = "HTTP_" + key
    if len(_ENVIRON_KEYS) < _MAX_KEYS:
        _ENVIRON_KEYS[name] = key
    return key


_TOKEN = re.compile(r"[!#$%&'*+.^`|~0-9A-Za-z-]+")
#: Shared by every connection thread without a lock: a dict store is atomic, and two threads racing
#: past the cap add an entry or two more, which is harmless.
_ENVIRON_KEYS: dict[str, str] = {}
_MAX_KEYS = 512


class BadRequest(Exception):
    """The bytes on the wire are not an HTTP request this server accepts; answered, then closed."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status


class _Body(io.RawIOBase):
    """``wsgi.input``: the request body and nothing past it, so the next request stays intact.

    ``remaining`` is the unread part of a Content-Length body, or ``None`` for a chunked one (then
    ``_chunk_left`` counts the current chunk and ``_done`` marks the last one). The first read sends
    ``100 Continue`` when the client asked for it, so a request refused unread costs no upload.
    """

    def __init__(self, rfile: io.BufferedReader, length: int | None, on_first_read: Callable[[], None] | None):
        super().__init__()
        self._rfile = rfile
        self.remaining = length
        self._chunk_left = 0
        self._done = length == 0
        self._failed = False  # a read raised: where the body ends is unknown
        self._on_first_read = on_first_read

    def readable(self) -> bool:
        return True

    @property
    def finished(self) -> bool:
        return self._done or self.remaining == 0

    def read(self, size: int | None = -1) -> bytes:
        if self._on_first_read is not None:
            self._on_first_read()
            self._on_first_read = None
        try:
            if size is None or size < 0:
                return b"".join(iter(lambda: self._read_some(65536), b""))
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
        if self._done or size == 0:
            return b""
        if self.remaining is not None:
            data = self._rfile.read(min(size, self.remaining))
            if not data:
                raise ConnectionError("client closed the connection mid-body")
            self.remaining -= len(data)
            self._done = self.remaining == 0
            return data
        if self._chunk_left == 0:
            self._chunk_left = self._next_chunk_size()
            if self._chunk_left == 0:
                self._skip_trailers()
                self._done = True
                return b""
        data = self._rfile.read(min(size, self._chunk_left))
        if not data:
            raise ConnectionError("client closed the connection mid-body")
        self._chunk_left -= len(data)
        if self._chunk_left == 0 and self._rfile.read(2) not in (b"\r\n",):
            raise BadRequest("400 Bad Request", "chunk not followed by CRLF")
        return data

    def _next_chunk_size(self) -> int:
        line = self._rfile.readline(MAX_LINE + 1)
        size = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not size or any(c not in b"0123456789abcdefABCDEF" for c in size):
            raise BadRequest("400 Bad Request", "malformed chunk size")
        return int(size, 16)

    def _skip_trailers(self) -> None:
        for _ in range(MAX_HEADERS + 1):
            line = self._rfile.readline(MAX_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                return
        raise BadRequest("431 Request Header Fields Too Large", "too many trailer fields")

    def can_drain(self) -> bool:
        """Whether what the app left unread may be skipped for the next request: not more than
        ``MAX_DRAIN`` bytes, not after a failed read (where the body ends is unknown), and not while
        the client still waits for ``100 Continue`` (its body may never come)."""
        if self.finished:
            return True
        if self._failed or self._on_first_read is not None:
            return False
        return self.remaining is None or self.remaining <= MAX_DRAIN

    def drain(self) -> bool:
        """Skip what the app left unread; ``False`` when the connection must close instead."""
        if not self.can_drain():
            return False
        skipped = 0
        try:
            while not self.finished:
                chunk = self._read_some(MAX_DRAIN)
                skipped += len(chunk)
                if skipped > MAX_DRAIN:
                    return False
        except BadRequest:
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

    ``serve_forever()`` runs the accept loop in the calling thread. ``_lock`` guards
    ``_connections``, the sockets of live connections, which ``shutdown()`` closes so that no
    connection thread outlives the server by more than its current response.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], host: str = "127.0.0.1", port: int = 0, *,
                 max_connections: int = 2048, idle_timeout: float = 75.0) -> None:
        self.app = app
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, port))
        self._listener.listen(1024)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._serving = False
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}
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
                selector.register(self._listener, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                while not self._stopping.is_set():
                    for key, _ in selector.select():
                        if key.fileobj is self._listener:
                            self._accept()
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
        """Stop accepting, close every connection, and wait (up to ``timeout``) for their threads.

        Idempotent; a server whose ``serve_forever`` never ran shuts down at once.
        """
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._wake_w.send(b"x")
        if self._serving:
            self._stopped.wait(timeout)
        with self._lock:
            live = list(self._connections.items())
        for sock, _ in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for _, thread in live:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def _accept(self) -> None:
        try:
            sock, address = self._listener.accept()
        except OSError as exc:  # out of descriptors, say: wait a little instead of spinning on select
            logger.warning("accept failed: %s", exc)
            self._stopping.wait(0.1)
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            full = len(self._connections) >= self.max_connections
            if not full:
                thread = threading.Thread(target=self._connection, args=(sock, address),
                                          name=f"minimcp-httpd-{address[1]}", daemon=True)
                self._connections[sock] = thread
        if not full:
            try:
                thread.start()
                return
            except RuntimeError:  # the system refused another thread
                with self._lock:
                    self._connections.pop(sock, None)
        logger.warning("refusing a connection: %d connections are open", len(self._connections))
        self._send_error(sock, "503 Service Unavailable", "Too many connections; try again later")
        self._close(sock)

    # --- one connection -----------------------------------------------------------------------------
    def _connection(self, sock: socket.socket, address: tuple[Any, ...]) -> None:
        sock.settimeout(self.idle_timeout)
        rfile = sock.makefile("rb", 65536)
        try:
            keep = True
            while keep and not self._stopping.is_set():
                try:
                    keep = self._one_request(sock, rfile, address)
                except BadRequest as bad:
                    self._send_error(sock, bad.status, str(bad))
                    keep = False
        except (OSError, ValueError):
            pass  # the client went away or timed out; nothing is left to answer
        except Exception:  # a fault of this server's own: end the connection, keep serving the others
            logger.exception("connection from %s failed", address[0])
        finally:
            rfile.close()
            self._close(sock)
            with self._lock:  # only now: shutdown() must still find (and cut short) a lingering close
                self._connections.pop(sock, None)

    @staticmethod
    def _close(sock: socket.socket) -> None:
        """Close after a lingering read: closing with unread input makes the kernel send a reset, which
        can destroy the response the client has not read yet (a refused body, a 503)."""
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(LINGER)
            skipped = 0
            while skipped < MAX_DRAIN:
                data = sock.recv(MAX_DRAIN)
                if not data:
                    break
                skipped += len(data)
        except OSError:
            pass
        finally:
            sock.close()

    def _one_request(self, sock: socket.socket, rfile: io.BufferedReader, address: tuple[Any, ...]) -> bool:
        """Serve one request; ``True`` when the connection may carry another."""
        line = rfile.readline(MAX_LINE + 1)
        while line in (b"\r\n", b"\n"):  # RFC 9112 §2.2: ignore empty lines before a request line
            line = rfile.readline(MAX_LINE + 1)
        if not line:
            return False
        if len(line) > MAX_LINE:
            raise BadRequest("414 URI Too Long", "request line too long")
        parts = line.decode("latin-1").rstrip("\r\n").split(" ")
        if len(parts) != 3 or not parts[0].isalpha():
            raise BadRequest("400 Bad Request", "malformed request line")
        method, target, version = parts
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise BadRequest("505 HTTP Version Not Supported", "HTTP/1.0 and HTTP/1.1 only")
        environ = self._environ(rfile, method, target, version, address)
        keep = self._wants_keep_alive(environ, version)
        length = environ.get("CONTENT_LENGTH")
        coding = environ.get("HTTP_TRANSFER_ENCODING")
        chunked = coding is not None
        if coding is not None and coding.lower().rsplit(",", 1)[-1].strip(" \t") != "chunked":
            raise BadRequest("400 Bad Request", "a request body's last transfer coding must be chunked")
        if chunked and length is not None:
            raise BadRequest("400 Bad Request", "both Content-Length and Transfer-Encoding")
        if length is not None and not (length.isascii() and length.isdigit()):  # not "²": int() refuses it
            raise BadRequest("400 Bad Request", "invalid Content-Length")
        expects = environ.get("HTTP_EXPECT", "").lower() == "100-continue" and version == "HTTP/1.1"
        body = _Body(rfile, None if chunked else int(length or 0),
                     (lambda: sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")) if expects else None)
        environ["wsgi.input"] = body
        keep = self._respond(sock, environ, version, keep)
        return keep and body.drain()

    def _environ(self, rfile: io.BufferedReader, method: str, target: str, version: str,
                 address: tuple[Any, ...]) -> dict[str, Any]:
        environ = dict(self._base_environ)
        if target.startswith(("http://", "https://")):  # absolute-form: keep only the path and query
            target = "/" + target.split("/", 3)[-1] if target.count("/") >= 3 else "/"
        path, _, query = target.partition("?")
        environ.update({
            "REQUEST_METHOD": method, "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
            "QUERY_STRING": query, "SERVER_PROTOCOL": version, "REMOTE_ADDR": str(address[0]),
            "REMOTE_PORT": str(address[1]),
        })
        for _ in range(MAX_HEADERS + 1):
            line = rfile.readline(MAX_LINE + 1)
            if line in (b"\r\n", b"\n"):
                return environ
            if not line:
                raise ConnectionError("client closed the connection mid-headers")
            if len(line) > MAX_LINE:
                raise BadRequest("431 Request Header Fields Too Large", "header line too long")
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise BadRequest("400 Bad Request", "header line without a colon")
            key = _ENVIRON_KEYS.get(name) or _environ_key(name)
            value = value.strip(" \t\r\n")
            if key in environ:
                if key == "CONTENT_LENGTH":
                    raise BadRequest("400 Bad Request", "repeated Content-Length")
                value = environ[key] + "," + value
            environ[key] = value
        raise BadRequest("431 Request Header Fields Too Large", "too many header fields")

    @staticmethod
    def _wants_keep_alive(environ: dict[str, Any], version: str) -> bool:
        connection = environ.get("HTTP_CONNECTION", "").lower()
        if version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    def _respond(self, sock: socket.socket, environ: dict[str, Any], version: str, keep: bool) -> bool:
        """Run the app and send what it answers; ``True`` when the connection may stay open."""
        response = _Response(self, sock, environ, version, keep)
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
        body = text.encode() + b"\n"
        try:
            sock.sendall(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n".encode()
                         + self._date.header() + b"\r\n" + body)
        except OSError:
            pass


class _Response:
    """One response in progress: the status and headers are sent with the first body bytes, so a
    small answer leaves in one packet; later chunks go out as soon as the app yields them."""

    def __init__(self, server: WSGIServer, sock: socket.socket, environ: dict[str, Any], version: str,
                 keep: bool) -> None:
        self._server = server
        self._sock = sock
        self._head_only = environ["REQUEST_METHOD"] == "HEAD"
        self._body: _Body = environ["wsgi.input"]  # taken before the app may replace it
        self._version = version
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
