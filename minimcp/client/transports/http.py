"""Streamable HTTP (both eras) over a ``requests.Session`` or pooled ``http.client`` connections:
POSTs answered with JSON or SSE, the legacy ``Mcp-Session-Id``, SSE resumption (``retry:`` and
``Last-Event-ID``) and the standalone GET stream read on a thread of its own."""

from __future__ import annotations

import contextlib
import http.client
import http.cookiejar
import logging
import socket
import threading
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import requests
import requests.auth
import urllib3.exceptions

from minimcp import jsonrpc
from minimcp.client.keepalive import http_session
from minimcp.client.transports.base import (
    Handler,
    Headers,
    NetworkError,
    SessionExpired,
    StreamPairContext,
    timed_out,
    unreachable,
)
from minimcp.client.transports.direct import DirectSession, direct_allowed
from minimcp.client.transports.inflight import InFlight, Stopped
from minimcp.client.transports.redelivery import Redelivery, Refusal
from minimcp.client.transports.responses import DRAIN_LIMIT, STREAM_ERRORS, chunks, finish, interrupt
from minimcp.client.transports.sse import SSEEvent, SSEParser
from minimcp.jsonrpc import MCPError, Message
from minimcp.shared.exceptions import UNKNOWN_QUESTION
from minimcp.types import INTERNAL_ERROR

logger = logging.getLogger("minimcp.client")

#: What ``cookies=`` takes: name -> value, or a cookie jar (``requests``' or the standard library's).
Cookies = Mapping[str, str] | http.cookiejar.CookieJar

#: How long a standalone GET may take to answer with its headers before we go on without it.
STANDALONE_OPEN_TIMEOUT = 10.0
#: How long ``close`` waits for the standalone stream's thread to end. Closing wakes a thread reading
#: the stream at once; one opening a new stream cannot be woken and ends when the GET is answered or
#: times out (``STANDALONE_OPEN_TIMEOUT`` on loopback, where connecting is immediate).
LISTENER_EXIT_TIMEOUT = STANDALONE_OPEN_TIMEOUT + 1.0
#: Reconnection attempts for one request's SSE stream that make no progress before giving up.
MAX_RESUME_ATTEMPTS = 5
#: The wait before resuming when the server sent no ``retry:`` field (the TS SDK's default).
DEFAULT_RETRY_MS = 1000
#: The largest SSE event a client buffers before failing the stream (the official default, 1 MiB).
DEFAULT_MAX_SSE_EVENT_SIZE = 1024 * 1024
#: (connect, read) seconds for a request with no timeout of its own. A ``requests.Session`` has no
#: timeout setting, so a session the caller supplies gets these too: without them a server that
#: stops answering would hold the calling thread forever.
DEFAULT_TIMEOUT = (30.0, 300.0)
#: How many times a notification, or an answer no call waits on, is sent when the server keeps
#: answering 503 or 429 (the later sends go from a thread of their own: nothing waits on them).
BACKGROUND_ATTEMPTS = 4
#: The most of a refusal's plain-text body a failed call quotes.
REASON_LIMIT = 200


def _is_answer_to(message: Any, request_id: Any) -> bool:
    return isinstance(message, dict) and "method" not in message and message.get("id") == request_id


#: How long a request's stream may take to end after our answer before its connection is dropped
#: instead of reused. A server ends the stream right after the answer (usually in the same write),
#: so this is only a bound for one that does not.
STREAM_END_GRACE = 0.05


def _read_stream_end(response: requests.Response) -> None:
    """Read a request stream's end after our answer, so its connection goes back to the pool.

    Closing a stream with unread bytes closes its connection, and the next request would pay a
    new one; waiting for an end that never comes would hold the caller, hence the short bound
    (the socket's own timeout, for these reads only: the pool sets it again on the next request).
    """
    sock = getattr(getattr(response.raw, "connection", None), "sock", None)
    if sock is None:
        return
    try:
        sock.settimeout(STREAM_END_GRACE)
        seen = 0
        for chunk in chunks(response):
            seen += len(chunk)
            if seen > DRAIN_LIMIT:
                return
    except (*STREAM_ERRORS, ValueError):
        logger.debug("A request stream did not end after its answer; its connection is dropped", exc_info=True)


def _error_message(body: bytes | None) -> str | None:
    """The message of the JSON-RPC error ``body`` carries, or ``None``."""
    try:
        error = jsonrpc.decode(body).get("error") if body else None
    except (MCPError, AttributeError):
        return None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else None


def _refusal_message(response: requests.Response) -> str | None:
    """The message of the JSON-RPC error a refusal carries (a short body, read to its end so the
    connection is kept), or ``None``."""
    return _error_message(finish(response))


def _refusal_reason(response: requests.Response) -> str:
    """What a refusal says: its JSON-RPC error's message, else its plain-text body's first line
    (a proxy's, a host's), else the status's own phrase."""
    body = finish(response)
    message = _error_message(body)
    if message is not None:
        return message
    text = body.decode("utf-8", "replace").strip().partition("\n")[0][:REASON_LIMIT] if body else ""
    if text:
        return text
    try:
        return HTTPStatus(response.status_code).phrase
    except ValueError:
        return f"HTTP {response.status_code}"


def _answer_refusal(refusal: Refusal) -> str:
    """Why the call waiting on our refused answer fails: the server's own reason, and how to fix a
    deployment whose processes do not share sessions when the server knows no such session (404)
    or question (``UNKNOWN_QUESTION``) and its reason does not say so already."""
    status, said, why = refusal
    if status is None:
        refused = f"Our answer to the server's question could not be sent ({said})"
    else:
        refused = f"The server refused our answer to its question (HTTP {status}"
        refused += f": {said})" if said else ")"
    refused += f", {why}" if why else ""
    refused += ", so the call waiting on it cannot finish"
    unknown_here = status == 404 or (said or "").startswith(UNKNOWN_QUESTION)
    if not unknown_here or "backend" in (said or ""):
        return refused
    return (f"{refused}: the answer reached another server process than the one that asked. Route each session "
            "to one process (sticky sessions at the load balancer), or give the server a shared backend "
            '(backend="redis://host:6379/0") so that any process takes any request')


def _busy(status: int, body: bytes, retry_after: str | None) -> str:
    """A temporary refusal (429, 503) as the caller should read it: what the server said, and when
    to try again."""
    said = body.decode("utf-8", "replace").strip()[:300]
    text = f"The server is busy (HTTP {status}" + (f": {said})" if said else ")")
    return text + (f"; retry after {retry_after} s" if retry_after else "; retry later")


def _refused_how(refusal: Refusal) -> str:
    """A refusal for the log: ``HTTP 503 (reason), why``."""
    status, reason, why = refusal
    how = f"HTTP {status}" if status is not None else "no HTTP answer"
    how += f" ({reason})" if reason else ""
    return how + (f", {why}" if why else "")


class HttpTransport(StreamPairContext):
    """Streamable HTTP (both eras) over a ``requests.Session``, or over ``http.client`` when the
    transport makes its own (``minimcp.client.transports.direct``: no session given, no ``auth``).

    Each request is one POST whose answer is either a JSON body or an SSE stream read on the
    calling thread. A stream that ends before our response, after the server gave it an event
    id, is resumed with GET + ``Last-Event-ID`` after the server's ``retry:`` delay.
    """

    #: A request given up on (abandoned, timed out) has its own connection closed (base.Transport).
    closes_abandoned = True

    def __init__(
        self,
        url: str,
        http_client: requests.Session | None = None,
        terminate_on_close: bool = True,
        auth: requests.auth.AuthBase | None = None,
        max_sse_event_size: int | None = DEFAULT_MAX_SSE_EVENT_SIZE,
        *,
        headers: Headers | None = None,
        cookies: Cookies | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> None:
        if max_sse_event_size is not None and max_sse_event_size <= 0:
            raise ValueError("max_sse_event_size must be positive or None")
        if http_client is not None and cookies is not None:
            raise TypeError("cookies= fills the session the transport makes; put them on your http_client instead")
        self.url = url
        self.max_sse_event_size = max_sse_event_size
        self.terminate_on_close = terminate_on_close
        self.auth = auth
        #: Sent with every request, beneath the protocol's own headers.
        self.extra_headers = dict(headers or {})
        self._owns_client = http_client is None
        if http_client is not None:
            self._http: requests.Session | DirectSession = http_client
        elif auth is None and cookies is None and direct_allowed(url):
            self._http = DirectSession()
        else:
            self._http = http_session()
            if cookies is not None:
                self._http.cookies.update(cookies)
        # Set when the server forgot our session (404) and no new one was made since: the session
        # starts over once (a fresh initialize); until that succeeds every other request fails at
        # once with SessionExpired, instead of going out without the header and earning a 400
        # ("Missing Mcp-Session-Id header") per call. _expired_because: what the server said then.
        self._expired = False
        self._expired_because: str | None = None
        #: (connect, read) seconds for a request with no timeout of its own.
        self._timeout = timeout
        self._handler: Handler | None = None
        self.session_id: str | None = None
        self._listener: threading.Thread | None = None
        self._closed = threading.Event()
        # Guards _standalone (the open GET response) against close() racing the listener thread,
        # and _in_flight (request id -> its InFlight, which abandon() stops) against abandon().
        self._lock = threading.Lock()
        self._standalone: requests.Response | None = None
        self._in_flight: dict[Any, InFlight] = {}
        self._standalone_headers: dict[str, str] = {}
        # Under _lock too: _asked_on (the id of each server question -> the call whose stream carried
        # it) and _refused (call id -> the error it fails with, once the server refused its answer).
        self._asked_on: dict[Any, Any] = {}
        self._refused: dict[Any, MCPError] = {}

    # -- plumbing

    def _headers(self, extra: Headers | None, accept: str) -> dict[str, str]:
        headers = {**self.extra_headers, "Accept": accept}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if extra:
            headers.update(extra)
        return headers

    def _read_timeout(self, timeout: float | None) -> tuple[float, float]:
        return self._timeout if timeout is None else (self._timeout[0], timeout)

    def _post(self, message: Message, headers: Headers | None, timeout: float | None,
              in_flight: InFlight | None = None) -> requests.Response:
        """POST ``message``; a request's ``in_flight`` can stop it from another thread while it goes
        out and its head is awaited."""
        merged = self._headers(headers, "application/json, text/event-stream")
        merged["Content-Type"] = "application/json"
        try:
            with in_flight.sending() if in_flight is not None else contextlib.nullcontext():
                # A DirectResponse has every attribute of a requests.Response that the transport reads.
                return self._http.post(  # type: ignore[return-value]
                    self.url, data=jsonrpc.encode(message), headers=merged, stream=True,
                    timeout=self._read_timeout(timeout), auth=self.auth,
                )
        except requests.exceptions.Timeout as exc:
            raise timed_out(message.get("method", "message"), NetworkError) from exc
        except requests.exceptions.RequestException as exc:
            raise unreachable() from exc

    def _get(self, headers: Headers | None, timeout: tuple[float, float]) -> requests.Response:
        return self._http.get(  # type: ignore[return-value]  # a DirectResponse, as in _post
            self.url, headers=self._headers(headers, "text/event-stream"), stream=True, timeout=timeout, auth=self.auth
        )

    # -- Transport

    def connect(self, handler: Handler) -> None:
        self._handler = handler

    def request(self, message: Message, *, headers: Headers | None = None, timeout: float | None = None) -> Message:
        method = message["method"]
        if self._expired and method != "initialize":
            raise SessionExpired(restartable=False, message=self._expired_because)
        deadline = None if timeout is None else time.monotonic() + timeout
        request_id = message["id"]
        in_flight = InFlight(deadline)
        with self._lock:
            self._in_flight[request_id] = in_flight
        try:
            response = self._post(message, headers, timeout, in_flight)
            in_flight.hold(response)
            if response.status_code == 404 and self.session_id is not None and method != "initialize":
                self.session_id = None
                self._expired = True
                self._expired_because = _refusal_message(response)
                raise SessionExpired(message=self._expired_because)
            if method == "initialize" and response.ok:
                self._expired = False
                if "mcp-session-id" in response.headers:
                    self.session_id = response.headers["mcp-session-id"]
            content_type = response.headers.get("content-type", "")
            if not response.ok or not content_type.startswith("text/event-stream"):
                return self._single(response, method)
            parser = SSEParser(self.max_sse_event_size)
            attempts = 0
            while True:
                seen = parser.last_event_id
                answer = self._drain(response, parser, request_id, method, deadline)
                if answer is not None:
                    return answer
                self._raise_refused(request_id)
                if parser.last_event_id is None or self._closed.is_set() or in_flight.stopped:
                    raise jsonrpc.connection_closed()
                attempts = 0 if parser.last_event_id != seen else attempts + 1
                if attempts >= MAX_RESUME_ATTEMPTS:
                    raise jsonrpc.connection_closed()
                response = self._resume(parser, headers, method, deadline, in_flight)
                in_flight.hold(response)
        except Stopped:
            raise jsonrpc.connection_closed() from None
        finally:
            in_flight.finish()
            with self._lock:
                self._in_flight.pop(request_id, None)
                self._refused.pop(request_id, None)
                for asked in [asked for asked, call in self._asked_on.items() if call == request_id]:
                    del self._asked_on[asked]

    def _raise_refused(self, request_id: Any) -> None:
        """Fail the call ``request_id`` at once if the server refused our answer to its question:
        the question would otherwise wait for an answer that never arrives."""
        with self._lock:
            refused = self._refused.pop(request_id, None)
        if refused is not None:
            raise refused

    def _answer_refused(self, message: Message, refusal: Refusal) -> None:
        """The server refused our answer to one of its questions for good (``refusal``): the call
        it belongs to fails now, with the server's reason. When the server does not know the
        session or the question, the likely cause is the deployment's (several server processes
        without sticky sessions or a shared backend), and the message says how to fix it."""
        with self._lock:
            call = self._asked_on.pop(message.get("id"), None)
            if call is None:
                return
            self._refused[call] = MCPError(INTERNAL_ERROR, _answer_refusal(refusal))
            in_flight = self._in_flight.get(call)
        if in_flight is not None:
            in_flight.interrupt()

    def abandon(self, request_id: Any) -> bool:
        """Stop the request ``request_id`` wherever it is: before it goes out, while its answer's
        head is awaited (its socket is shut: see ``inflight``), or while its answer is read. ``True``
        when that closed its exchange; ``False`` when it was not in flight, or its head is awaited
        on a ``requests.Session`` without the ``KeepAliveRetryAdapter`` (it ends when the head comes)."""
        with self._lock:
            in_flight = self._in_flight.get(request_id)
        return in_flight is not None and in_flight.stop()

    def _single(self, response: requests.Response, method: str) -> Message:
        """A JSON body, or an HTTP error that may still carry a JSON-RPC error we can report."""
        try:
            body = response.content
        except STREAM_ERRORS:
            raise jsonrpc.connection_closed() from None
        finally:
            response.close()
        try:
            message = jsonrpc.decode(body)
        except MCPError:
            message = None
        if isinstance(message, dict) and ("result" in message or isinstance(message.get("error"), dict)):
            return message
        # The official text, with what a person needs to act on it (a refused token's challenge) as data.
        refusal: dict[str, Any] = {"status": response.status_code}
        if "WWW-Authenticate" in response.headers:
            refusal["wwwAuthenticate"] = response.headers["WWW-Authenticate"]
        if response.status_code in (429, 503):  # a server past its capacity says why and when to retry
            raise MCPError(INTERNAL_ERROR, _busy(response.status_code, body, response.headers.get("Retry-After")),
                           {**refusal, "retryAfter": response.headers.get("Retry-After")})
        raise MCPError(INTERNAL_ERROR, "Server returned an error response", refusal)

    def _drain(
        self, response: requests.Response, parser: SSEParser, request_id: Any, method: str, deadline: float | None
    ) -> Message | None:
        """Read one SSE stream until our response; ``None`` when it ended (or broke) first."""
        try:
            for chunk in chunks(response):
                for event in parser.feed(chunk):
                    try:
                        message = jsonrpc.decode(event.data)
                    except MCPError:
                        logger.warning("Ignoring an SSE event that is not JSON: %.200r", event.data)
                        continue
                    if _is_answer_to(message, request_id):
                        _read_stream_end(response)
                        return message
                    if isinstance(message, dict) and "method" in message and self._handler is not None:
                        if "id" in message:
                            with self._lock:
                                self._asked_on[message["id"]] = request_id
                        self._handler(message)
                        self._raise_refused(request_id)
                if deadline is not None and time.monotonic() > deadline:
                    raise timed_out(method)
        except (requests.exceptions.Timeout, urllib3.exceptions.ReadTimeoutError, socket.timeout):
            raise timed_out(method) from None
        except STREAM_ERRORS:
            logger.debug("SSE stream for %s broke", method, exc_info=True)
        finally:
            response.close()
        return None

    def _resume(self, parser: SSEParser, headers: Headers | None, method: str, deadline: float | None,
                in_flight: InFlight) -> requests.Response:
        delay = (parser.retry_ms if parser.retry_ms is not None else DEFAULT_RETRY_MS) / 1000
        if deadline is not None and time.monotonic() + delay > deadline:
            raise timed_out(method)
        if self._closed.wait(delay):
            raise jsonrpc.connection_closed()
        resume_headers = dict(headers or {})
        resume_headers["Last-Event-ID"] = parser.last_event_id or ""
        remaining = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        try:
            with in_flight.sending():
                response = self._get(resume_headers, self._read_timeout(remaining))
        except Stopped:
            raise
        except requests.exceptions.Timeout:
            raise timed_out(method) from None
        except requests.exceptions.RequestException:
            raise jsonrpc.connection_closed() from None
        if not response.ok:
            finish(response)
            raise jsonrpc.connection_closed()
        return response

    def send(self, message: Message, *, headers: Headers | None = None) -> None:
        """POST a notification or an answer; one the server refuses with 503 or 429 goes again
        (``redelivery``). An answer a call waits on is sent again on this thread, within the
        call's deadline, and a refusal that stands fails that call at once with the server's
        reason; anything else is sent again from a thread of its own, a few times."""
        if self._expired:
            raise SessionExpired(restartable=False, message=self._expired_because)
        with self._lock:
            call = None if "method" in message else self._asked_on.get(message.get("id"))
            in_flight = None if call is None else self._in_flight.get(call)
        if in_flight is None:
            refusal = self._post_until_taken(message, headers, Redelivery(None, BACKGROUND_ATTEMPTS), detach=True)
            if refusal is not None:
                logger.warning("Server refused %s with %s", message.get("method", "a response"), _refused_how(refusal))
            return
        refusal = self._post_until_taken(message, headers, Redelivery(in_flight.deadline))
        if refusal is None:
            with self._lock:
                self._asked_on.pop(message.get("id"), None)
            return
        logger.warning("Server refused a response with %s", _refused_how(refusal))
        self._answer_refused(message, refusal)

    def _post_until_taken(self, message: Message, headers: Headers | None, redelivery: Redelivery,
                          wait: float = 0.0, detach: bool = False) -> Refusal | None:
        """POST ``message`` (after ``wait`` seconds) until the server takes it: ``None``, or the
        refusal that stands (final, or no wait left within ``redelivery``'s bound), or the failure
        of a POST that did not go through. ``detach``: the first POST goes from here (a failure of
        it is raised, as ever) and the later ones from a thread of their own, which logs a refusal
        that stands."""
        while True:
            if wait and self._closed.wait(wait):
                return Refusal(None, "the client closed")
            try:
                response = self._post(message, headers, redelivery.remaining())
            except MCPError as failed:
                if detach:
                    raise
                return Refusal(None, failed.message)
            if response.ok:
                finish(response)
                return None
            status = response.status_code
            next_wait = redelivery.wait(status, response.headers.get("Retry-After"))
            reason = _refusal_reason(response)
            if next_wait is None:
                return Refusal(status, reason, redelivery.why)
            wait = next_wait
            logger.debug("Server refused %s with HTTP %s (%s); sending it again in %.2f s",
                         message.get("method", "a response"), status, reason, wait)
            if detach:
                threading.Thread(target=self._resend, args=(message, headers, redelivery, wait),
                                 name="minimcp-http-resend", daemon=True).start()
                return None

    def _resend(self, message: Message, headers: Headers | None, redelivery: Redelivery, wait: float) -> None:
        """Send again, after ``wait`` seconds, what no call waits on (a thread of its own)."""
        refusal = self._post_until_taken(message, headers, redelivery, wait)
        if refusal is not None:
            logger.warning("Server refused %s with %s", message.get("method", "a response"), _refused_how(refusal))

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
        try:
            response = self._get(headers, (STANDALONE_OPEN_TIMEOUT, self._timeout[1]))
        except requests.exceptions.RequestException:
            logger.debug("No standalone stream", exc_info=True)
            return None
        if not response.ok or not response.headers.get("content-type", "").startswith("text/event-stream"):
            finish(response)
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
                for chunk in chunks(response):
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
            interrupt(standalone)
        listener = self._listener
        if listener is not None and listener is not threading.current_thread():  # a handler may close us
            listener.join(LISTENER_EXIT_TIMEOUT)
            if listener.is_alive():
                logger.warning("The standalone stream's thread did not end within %.0f s of close; it ends at its "
                               "read timeout", LISTENER_EXIT_TIMEOUT)
        if self._owns_client:
            self._http.close()
