"""The HTTP the client speaks when nobody handed it a ``requests.Session``: its own, on pooled sockets.

Why not ``requests`` everywhere: for a JSON-RPC POST on loopback, ``requests`` spends more CPU
than the rest of the call (preparing the request, merging the environment's proxy and TLS
settings on every send, wrapping the answer), and a synchronous client is judged by exactly that
cost. The request is written here, head and body in one ``sendall`` (``http.client`` and urllib3
both write them apart): on loopback each write costs the sender the delivery to the server, so one
write is half that cost. The answer is read by :class:`~minimcp.client.transports.http11.Answer`,
which parses a head in a fraction of the time ``http.client``'s ``email`` parser takes.

:class:`DirectSession` answers the few calls :class:`~minimcp.client.transports.http.HttpTransport`
makes (``post``, ``get``, ``delete``, ``close``) with responses that have the attributes it reads
(``status_code``, ``ok``, ``headers``, ``content``, ``raw.read1``, ``raw.shutdown``, ``close``)
and raises ``requests``' own exceptions, so the transport has one code path for both.
``requests`` stays the surface for everything a caller configures: a ``requests.Session`` of your
own, or an ``auth=`` (a ``requests.auth.AuthBase``, whose hooks need a prepared request), is sent
through ``requests``; so is a URL that the environment routes through a proxy or gives a CA
bundle of its own (:func:`direct_allowed`), the settings ``requests`` reads from there.

The one resend of a request whose kept-alive connection the server dropped before answering
follows ``minimcp.client.keepalive``'s rule: only on a reused connection, only before any byte of
the answer, always on a new connection.
"""

from __future__ import annotations

import http.client
import logging
import os
import re
import socket
import ssl
import threading
import urllib.request
from urllib.parse import urlsplit

import requests
import requests.utils

from minimcp.client.transports.http11 import Answer
from minimcp.client.transports.inflight import Stopped, stopped, waiting_on

logger = logging.getLogger("minimcp.client")
_LINE_BREAKS = re.compile(r"[\r\n]")

#: Idle connections kept per server; a caller finding none opens a new one.
POOL_SIZE = 32
_CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
#: What a server closing a kept-alive connection under a request looks like before any answer byte.
_DROPPED = (http.client.RemoteDisconnected, ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


def direct_allowed(url: str) -> bool:
    """Whether ``url`` can be reached without what only ``requests`` reads from the environment:
    a proxy for its scheme (and no ``NO_PROXY`` bypass), or a CA bundle named by variable."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.scheme == "https" and any(os.environ.get(name) for name in _CA_BUNDLE_VARIABLES):
        return False
    return parts.scheme not in urllib.request.getproxies() or bool(urllib.request.proxy_bypass(parts.hostname))


class _Connection:
    """One kept-alive socket to a server; a connection serves one request at a time."""

    __slots__ = ("sock",)

    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = sock

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()


def _header_line(name: str, value: str) -> str:
    """``name: value``, refusing what would end the line early (a header injected by a value)."""
    if _LINE_BREAKS.search(name) or _LINE_BREAKS.search(value):
        raise ValueError(f"Invalid header {name!r}: header names and values may not contain CR or LF")
    return f"{name}: {value}"


class _Stream:
    """What the transport reads a streamed answer through: ``read1`` and, from another thread,
    ``shutdown`` (which wakes a blocked ``read1`` with the end of the stream)."""

    def __init__(self, response: Answer, connection: _Connection) -> None:
        self._response = response
        self.connection = connection

    def read1(self, size: int) -> bytes:
        return self._response.read1(size)

    def shutdown(self) -> None:
        sock = self.connection.sock
        if sock is not None:
            sock.shutdown(socket.SHUT_RD)


class DirectResponse:
    """An :class:`Answer` with the attributes the transport reads from a ``requests.Response``."""

    def __init__(self, response: Answer, connection: _Connection, pool: _Pool) -> None:
        self._response = response
        self._connection = connection
        self._pool = pool
        self.raw = _Stream(response, connection)
        self.status_code = response.status
        self.headers = response.headers  # case-insensitive, as requests' are
        self._content: bytes | None = None
        self._closed = False

    @property
    def ok(self) -> bool:
        return self.status_code < 400

    @property
    def content(self) -> bytes:
        if self._content is None:
            try:
                self._content = self._response.read()
            except (http.client.HTTPException, OSError) as error:
                raise requests.exceptions.ChunkedEncodingError(error) from error
        return self._content

    def close(self) -> None:
        """Give the connection back when the answer was read to its end; drop it otherwise
        (reading on might never end: an SSE stream)."""
        if self._closed:
            return
        self._closed = True
        if self._response.isclosed() and not self._response.will_close:
            self._pool.give(self._connection)
        else:
            self._response.close()
            self._connection.close()


class _Pool:
    """The idle connections to one server, newest first (the one least likely to have timed out)."""

    def __init__(self, scheme: str, host: str, port: int, maxsize: int) -> None:
        self.scheme, self.host, self.port, self.maxsize = scheme, host, port, maxsize
        named = f"[{host}]" if ":" in host else host  # an IPv6 address
        self.host_header = named if port == (443 if scheme == "https" else 80) else f"{named}:{port}"
        self._context: ssl.SSLContext | None = None  # made with the first https connection
        # Guards _idle: callers take and give back connections from any thread.
        self._lock = threading.Lock()
        self._idle: list[_Connection] = []

    def take(self) -> _Connection | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def give(self, connection: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.maxsize:
                self._idle.append(connection)
                return
        connection.close()

    def new(self, connect_timeout: float) -> _Connection:
        try:
            sock = socket.create_connection((self.host, self.port), connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                if self._context is None:
                    self._context = ssl.create_default_context(cafile=requests.utils.DEFAULT_CA_BUNDLE_PATH)
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except socket.timeout as error:
            raise requests.exceptions.ConnectTimeout(error) from error
        except OSError as error:  # ssl.SSLError too
            raise requests.exceptions.ConnectionError(error) from error
        return _Connection(sock)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


class DirectSession:
    """POST, GET and DELETE over pooled connections; safe to share between threads
    (each request holds a connection of its own until its answer is read or closed)."""

    def __init__(self, maxsize: int = POOL_SIZE) -> None:
        self._maxsize = maxsize
        # Guards _pools ((scheme, host, port) -> its pool): threads sending their first request at
        # once must share one pool; and _routes (URL -> its pool and request target), which spares
        # each request parsing the URL that every request of a transport shares.
        self._lock = threading.Lock()
        self._pools: dict[tuple[str, str, int], _Pool] = {}
        self._routes: dict[str, tuple[_Pool, str]] = {}

    def _pool(self, url: str) -> tuple[_Pool, str]:
        with self._lock:
            route = self._routes.get(url)
        if route is not None:
            return route
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        with self._lock:
            pool = self._pools.get((scheme, host, port))
            if pool is None:
                pool = self._pools[(scheme, host, port)] = _Pool(scheme, host, port, self._maxsize)
            route = self._routes[url] = (pool, path)
        return route

    def request(self, method: str, url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None,
                timeout: tuple[float, float], stream: bool = True, auth: None = None) -> DirectResponse:
        """One request; its answer's body is left unread, as ``requests`` leaves it with
        ``stream=True`` (the only way the transport asks). A signer needs ``requests``."""
        if auth is not None:
            raise TypeError("DirectSession sends no auth=; give the transport a requests.Session for that")
        pool, path = self._pool(url)
        connection = pool.take()
        if connection is not None:
            try:
                return self._exchange(pool, connection, method, path, data, headers, timeout[1])
            except _DROPPED:
                connection.close()
                if stopped():  # the drop was our own stop, not the server's idle close
                    raise Stopped() from None
            logger.info("%s %s: the server closed an idle connection as the request went out; sending it once more "
                        "on a new connection", method, url)
        return self._exchange(pool, pool.new(timeout[0]), method, path, data, headers, timeout[1], fresh=True)

    @staticmethod
    def _exchange(pool: _Pool, connection: _Connection, method: str, path: str, data: bytes | None,
                  headers: dict[str, str] | None, read_timeout: float, fresh: bool = False) -> DirectResponse:
        """Write the request in one send and read the answer's head. On a reused connection a drop
        before the first byte of the answer propagates (as one of ``_DROPPED``) for the resend."""
        lines = [f"{method} {path} HTTP/1.1", f"Host: {pool.host_header}"]
        lines.extend(_header_line(name, value) for name, value in (headers or {}).items())
        if data is not None:
            lines.append(f"Content-Length: {len(data)}")
        lines.extend(("", ""))
        wire = "\r\n".join(lines).encode("latin-1") + (data or b"")
        try:
            sock = connection.sock
            assert sock is not None  # a closed connection is never pooled
            sock.settimeout(read_timeout)
            with waiting_on(sock):  # where a stop from another thread shuts the socket (inflight)
                sock.sendall(wire)
                return DirectResponse(Answer(sock, method), connection, pool)
        except _DROPPED as error:
            if fresh:
                connection.close()
                raise requests.exceptions.ConnectionError(error) from error
            raise
        except socket.timeout as error:
            connection.close()
            raise requests.exceptions.ReadTimeout(error) from error
        except (http.client.HTTPException, OSError) as error:
            connection.close()
            raise requests.exceptions.ConnectionError(error) from error

    def post(self, url: str, **options: object) -> DirectResponse:
        return self.request("POST", url, **options)  # type: ignore[arg-type]

    def get(self, url: str, **options: object) -> DirectResponse:
        return self.request("GET", url, **options)  # type: ignore[arg-type]

    def delete(self, url: str, **options: object) -> DirectResponse:
        response = self.request("DELETE", url, **options)  # type: ignore[arg-type]
        try:
            response.content  # read to its end, the connection serves the next request
        except requests.exceptions.RequestException:
            logger.debug("Could not read the answer to DELETE", exc_info=True)
        response.close()
        return response

    def close(self) -> None:
        with self._lock:
            pools, self._pools, self._routes = list(self._pools.values()), {}, {}
        for pool in pools:
            pool.close()
