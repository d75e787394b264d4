"""The deprecated HTTP+SSE transport (spec 2024-11-05), which many remote servers still speak.

One long GET opens an event stream; its first event, ``endpoint``, names the URL the client POSTs
every message to, and everything the server says (answers included) comes back on the stream.
So this transport is a stream reader like stdio's (``router.MessageRouter`` pairs answers with
the callers waiting on them) with POSTs for the other direction. The endpoint must be on the
stream's own origin: a server that names another host is refused, since the client would send it
every message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import requests
import requests.auth

from minimcp import jsonrpc
from minimcp.client.keepalive import http_session
from minimcp.client.transports.base import Handler, Headers, NetworkError, StreamPairContext, unreachable
from minimcp.client.transports.responses import STREAM_ERRORS, chunks, finish, interrupt
from minimcp.client.transports.router import MessageRouter
from minimcp.client.transports.sse import SSEParser
from minimcp.jsonrpc import MCPError, Message
from minimcp.types import CONNECTION_CLOSED, INTERNAL_ERROR

logger = logging.getLogger("minimcp.client")

#: How long ``close`` waits for the stream's reader thread after waking it.
READER_EXIT_TIMEOUT = 5.0


def _same_origin(a: str, b: str) -> bool:
    first, second = urlsplit(a), urlsplit(b)
    return (first.scheme, first.netloc) == (second.scheme, second.netloc)


class SseTransport(StreamPairContext):
    """Messages POSTed to the endpoint the server's event stream announced; answers on that stream."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, Any] | None = None,
        timeout: float = 5.0,
        sse_read_timeout: float = 300.0,
        auth: requests.auth.AuthBase | None = None,
        on_session_created: Callable[[str], None] | None = None,
    ) -> None:
        self.url = url
        self.headers = {str(name): str(value) for name, value in (headers or {}).items()}
        self.timeout = timeout
        self.sse_read_timeout = sse_read_timeout
        self.auth = auth
        self.on_session_created = on_session_created
        #: Where messages are POSTed, once the stream has said.
        self.endpoint: str | None = None
        self._http = http_session()
        self._router = MessageRouter("minimcp-sse", self._post)
        self._announced = threading.Event()
        # Guards _stream (the open GET response) against close() racing the reader thread.
        self._lock = threading.Lock()
        self._stream: requests.Response | None = None
        self._closed = False
        self._reader: threading.Thread | None = None

    def connect(self, handler: Handler) -> None:
        """Open the stream and wait (``timeout`` seconds) for the endpoint it announces."""
        self._router.handler = handler
        try:
            response = self._http.get(self.url, headers={**self.headers, "Accept": "text/event-stream"}, stream=True,
                                      timeout=(self.timeout, self.sse_read_timeout), auth=self.auth)
        except requests.exceptions.RequestException as exc:
            raise unreachable() from exc
        if not response.ok:
            finish(response)
            raise NetworkError(CONNECTION_CLOSED, f"The SSE endpoint answered HTTP {response.status_code}")
        with self._lock:
            self._stream = response
        self._reader = threading.Thread(target=self._read, args=(response,), name="minimcp-sse-reader", daemon=True)
        self._reader.start()
        if not self._announced.wait(self.timeout) or self.endpoint is None:
            self.close()
            raise NetworkError(CONNECTION_CLOSED, f"The server sent no endpoint event within {self.timeout} s")

    def _read(self, response: requests.Response) -> None:
        parser = SSEParser()
        try:
            for chunk in chunks(response):
                for event in parser.feed(chunk):
                    if event.event == "endpoint":
                        self._on_endpoint(event.data)
                    elif event.event == "message":
                        self._on_message(event.data)
        except (*STREAM_ERRORS, MCPError):
            if not self._closed:
                logger.debug("The SSE stream broke", exc_info=True)
        finally:
            response.close()
            self._announced.set()
            self._router.end()

    def _on_endpoint(self, data: str) -> None:
        endpoint = urljoin(self.url, data.strip())
        if not _same_origin(self.url, endpoint):
            logger.error("Refusing the endpoint %r: it is not on the stream's origin %r", endpoint, self.url)
        else:
            self.endpoint = endpoint
            query = parse_qs(urlsplit(endpoint).query)
            session_id = (query.get("sessionId") or query.get("session_id") or [""])[0]
            if session_id and self.on_session_created is not None:
                self.on_session_created(session_id)
        self._announced.set()

    def _on_message(self, data: str) -> None:
        if not data:
            return
        try:
            message = jsonrpc.decode(data)
        except MCPError:
            logger.warning("Ignoring an SSE event that is not JSON: %.200r", data)
            return
        if isinstance(message, dict):
            self._router.route(message)

    def _post(self, message: Message) -> None:
        if self.endpoint is None:
            raise jsonrpc.connection_closed()
        try:
            response = self._http.post(self.endpoint, data=jsonrpc.encode(message),
                                       headers={**self.headers, "Content-Type": "application/json"},
                                       timeout=(self.timeout, self.timeout), auth=self.auth)
        except requests.exceptions.RequestException as exc:
            raise unreachable() from exc
        finish(response)
        if not response.ok:
            raise MCPError(INTERNAL_ERROR, f"The server refused the message with HTTP {response.status_code}")

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        return self._router.exchange(message, self._post, timeout)

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        self._post(message)

    def listen(self, *, headers: Headers | None = None) -> None:
        """Nothing to open: every server message already arrives on the one stream."""

    def abandon(self, request_id: Any) -> bool:
        self._router.abandon(request_id)
        return False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            stream, self._stream = self._stream, None
        if stream is not None:
            interrupt(stream)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(READER_EXIT_TIMEOUT)
        self._http.close()
