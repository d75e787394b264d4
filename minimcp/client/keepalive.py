"""The HTTP session the client makes for itself: a dropped idle connection costs one resend, not a call.

HTTP servers close kept-alive connections they consider idle (Node's default is after 5 s,
werkzeug's and gunicorn's after a few seconds too). When the client picks such a connection from
its pool in the same instant, its request goes out on a socket the server is closing, and the
answer is a reset or an empty read: ``requests`` reports ``Connection aborted``, and ``requests``
never retries a POST (its adapter passes ``Retry(0, read=False)`` to urllib3). Under load this is
a real, if rare, failure of a perfectly healthy server.

When is sending a JSON-RPC POST again safe? HTTP lets a client resend automatically only what it
knows was not applied (RFC 9110 section 9.2.2). This module resends exactly once, and only when
all of these hold:

* the connection had already carried a complete response (it was reused from the pool): a server
  closes an idle connection between requests, so a drop there means our request arrived after
  the server decided to close, and it was never read as a request;
* not one byte of the response arrived (the drop came before the status line): had the server
  started answering, it would have run the method, and we would not know how far;
* the body is bytes we still hold (never a stream we consumed).

A drop on a fresh connection is not resent: the server accepted that connection for this very
request, so it may have run it before dying. A server that reads a request on a reused connection,
runs it, and closes without writing a byte could see it twice; that is not how an HTTP server
ends a request, and browsers make the same bet for the same case. The resend goes out on a new
connection, never a pooled one, since the other idle connections are the same age as the dropped
one. Requests through a proxy are sent as ``requests`` sends them.
"""

from __future__ import annotations

import http.client
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import requests
import requests.adapters
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from minimcp.client.transports.inflight import stopped, waiting_on

logger = logging.getLogger("minimcp.client")


class IdleConnectionDropped(http.client.RemoteDisconnected):
    """The server closed a reused connection before the first byte of its response.

    A :class:`~http.client.RemoteDisconnected`, so urllib3 and ``requests`` handle it as the
    error they already know; :class:`KeepAliveRetryAdapter` recognises it and resends once.
    """


class _CountingConnection(HTTPConnection):
    """Knows how many complete response heads it read since it last connected."""

    _answered = 0

    def connect(self) -> None:
        super().connect()
        self._answered = 0

    def getresponse(self) -> Any:  # urllib3's HTTPResponse; its stubs do not say so
        reused = self._answered > 0
        try:
            with waiting_on(self.sock):  # where a stop from another thread shuts the socket (transports.inflight)
                response = super().getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, ConnectionAbortedError) as error:
            if reused:
                raise IdleConnectionDropped(f"Server closed a kept-alive connection without answering: {error}") from error
            raise
        self._answered += 1
        return response


class _CountingTLSConnection(_CountingConnection, HTTPSConnection):
    """The same count over TLS."""


class _Pool(HTTPConnectionPool):
    ConnectionCls = _CountingConnection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _CountingTLSConnection


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it wraps: requests and urllib3 nest the socket error in ``args``,
    ``reason`` and ``__cause__``."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [*current.args, getattr(current, "reason", None), current.__cause__]
        pending.extend(item for item in linked if isinstance(item, BaseException))


def dropped_while_idle(error: BaseException) -> bool:
    """True when ``error`` is a reused connection closed before any byte of the answer."""
    return any(isinstance(cause, IdleConnectionDropped) for cause in _causes(error))


class KeepAliveRetryAdapter(requests.adapters.HTTPAdapter):
    """An ``HTTPAdapter`` that resends a request once, on a new connection, when the server
    dropped the reused connection it went out on before answering (see the module docstring).

    Mount it on a ``requests.Session`` of your own to get the same behaviour there::

        http = requests.Session()
        http.mount("http://", KeepAliveRetryAdapter())
        http.mount("https://", KeepAliveRetryAdapter())
    """

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        options: dict[str, Any] = dict(stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        try:
            return super().send(request, **options)
        except requests.exceptions.ConnectionError as error:
            if not dropped_while_idle(error) or not isinstance(request.body, (bytes, str, type(None))) or stopped():
                raise
        logger.info("%s %s: the server closed an idle connection as the request went out; sending it once more "
                    "on a new connection", request.method, request.url)
        # A one-request adapter: its pool is empty, so the resend cannot land on another old connection.
        once = requests.adapters.HTTPAdapter()
        try:
            response = once.send(request, **options)
        finally:
            once.close()  # drops only idle connections; a streaming response keeps its own until read
        response.connection = self
        return response


def http_session() -> requests.Session:
    """A ``requests.Session`` with :class:`KeepAliveRetryAdapter` mounted for both schemes."""
    session = requests.Session()
    session.mount("http://", KeepAliveRetryAdapter())
    session.mount("https://", KeepAliveRetryAdapter())
    return session


__all__ = ["IdleConnectionDropped", "KeepAliveRetryAdapter", "dropped_while_idle", "http_session"]
