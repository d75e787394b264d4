"""Every HTTP status Streamable HTTP answers with, in one place: each refusal is a named error.

The exchange, the WSGI adapter and the hosts never write a status number; they raise one of these
(or read ``OK``/``ACCEPTED``), and ``exchange.refusal_response`` turns it into an answer. Two
families, by what the body is:

- ``EnvelopeError``: a JSON-RPC error body (``{"jsonrpc": "2.0", "id": ..., "error": ...}``), for
  what an MCP client reads: a bad session, a wrong ``Accept``, a body too large, ...
- ``PlainError``: a plain-text body, for what happens before the request is MCP at all (an
  unknown path, a forbidden Host or Origin, a method the endpoint does not take, a custom route
  that failed).

How a JSON-RPC error *answer* travels is the third rule here (``status_of``): over 2026-07-28 by
its code, per the official ``ERROR_CODE_HTTP_STATUS`` table (kept at its official path,
``minimcp.shared.inbound``, and read only here); a legacy error travels with 200, in the body. The
era says which rule applies (``Era.error_statuses``). In either era an answer that failed on the
shared state says so in its status: 503 with ``Retry-After`` while it is unreachable, 500 when it
refuses the server's configuration.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, ClassVar, cast

from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.faults import BackendFault, BackendMisconfigured, BackendUnavailable
from minimcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from minimcp.types import INTERNAL_ERROR, INVALID_REQUEST

#: The answer went as asked (a JSON answer, an SSE stream, a session ended).
OK = HTTPStatus.OK
#: A notification or a client's response was taken; nothing to answer.
ACCEPTED = HTTPStatus.ACCEPTED
#: What a host answers a caller that has not signed in (the body and challenge are the host's).
UNAUTHORIZED = HTTPStatus.UNAUTHORIZED
#: A host's consent page sends the browser back to the MCP client's redirect URI.
REDIRECT = HTTPStatus.FOUND
#: The shared state is unreachable: retry after ``Retry-After`` seconds.
UNAVAILABLE = HTTPStatus.SERVICE_UNAVAILABLE
#: The shared state refuses the server's configuration: no retry helps.
MISCONFIGURED = HTTPStatus.INTERNAL_SERVER_ERROR

#: Every status line, for an adapter that writes one (``"404 Not Found"``).
STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


def http_status(code: int) -> int:
    """The status a 2026-07-28 error travels with, refused by the ladder or failed by a handler."""
    return ERROR_CODE_HTTP_STATUS.get(code, OK)


def status_of(answer: Message, by_code: bool = True) -> int:
    """An answer's status: an error's by its code (``by_code``, 2026-07-28) or 200 (legacy); in
    either era 503 when a handler failed because the shared state was unreachable (the client
    retries instead of giving up), 500 when it refuses the server's configuration."""
    error = answer.get("error")
    if error is None:
        return OK
    message = error.get("message")
    if message == BackendUnavailable.MESSAGE:
        return UNAVAILABLE
    if BackendMisconfigured.said_in(message):
        return MISCONFIGURED
    return http_status(error.get("code")) if by_code else OK


# --- refusals with a JSON-RPC error body -----------------------------------------------------------
class EnvelopeError(MCPError):
    """A request refused before any handler ran; ``status`` is the HTTP status Streamable HTTP gives it.

    A subclass names one refusal and its status; ``message`` defaults to the refusal's own words,
    ``headers`` go out with the answer, and ``request_id`` is the id it answers (``None`` for a
    refusal that has no request to answer, as session errors have none: api.md §5.7).
    """

    status: ClassVar[int] = HTTPStatus.BAD_REQUEST
    text: ClassVar[str] = "Bad Request"

    def __init__(self, message: str | None = None, *, code: int = INVALID_REQUEST, data: Any = None,
                 headers: dict[str, str] | None = None, request_id: Any = None) -> None:
        super().__init__(code, message or self.text, data)
        self.headers = headers or {}
        self.request_id = request_id


class BadEnvelope(EnvelopeError):
    """The request is not one this endpoint takes as sent (the message is the reason)."""


class Unparsable(EnvelopeError):
    """The body is not JSON-RPC; ``reply`` is the error answer (echoing the id, when readable)."""

    def __init__(self, reply: Message) -> None:
        super().__init__(reply["error"]["message"], code=reply["error"]["code"])
        self.reply = reply


class MissingSession(EnvelopeError):
    text = "Bad Request: Missing Mcp-Session-Id header"


class UnknownEventId(EnvelopeError):
    text = "Unknown or expired Last-Event-ID"


class SessionNotFound(EnvelopeError):
    """No live session has this id for this principal (a session id is not a credential)."""

    status = HTTPStatus.NOT_FOUND
    text = "Session not found"


class SessionElsewhere(SessionNotFound):
    """The session id was minted by another server process (or by this server before a restart),
    and this process does not know it: the fix is the deployment's, so the message names it."""

    text = ("Session not found: this session was opened on another server process (or before this server "
            "restarted), and this process does not know it. Several processes can serve one session only with "
            'a shared backend (MCPServer(backend="redis://host:6379/0")); otherwise route each session to one '
            "process (sticky sessions at the load balancer, keyed on the Mcp-Session-Id header)")


class SessionLost(SessionNotFound):
    """The session's record is gone from the shared backend, which lost its data (the session was
    minted under an epoch it no longer holds): the client starts a new session."""

    text = ("Session not found: its record is gone from the server's shared backend, which lost its data "
            "(restarted without persistence, or flushed); start a new session")


class NotAcceptable(EnvelopeError):
    status = HTTPStatus.NOT_ACCEPTABLE


class StreamConflict(EnvelopeError):
    status = HTTPStatus.CONFLICT
    text = "Conflict: a standalone stream is already open"


class BodyTooLarge(EnvelopeError):
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    text = "Request body too large"


class UnsupportedMediaType(EnvelopeError):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE
    text = "Content-Type must be application/json"


class TooManySessions(EnvelopeError):
    status = HTTPStatus.SERVICE_UNAVAILABLE
    text = "Too many sessions; try again later"


class Unavailable(EnvelopeError):
    """The shared state is unreachable: a client waits ``Retry-After`` and retries, where a 404
    "Session not found" would make it start over."""

    status = UNAVAILABLE

    def __init__(self, down: BackendUnavailable, request_id: Any = None) -> None:
        super().__init__(str(down), code=INTERNAL_ERROR, headers={"Retry-After": str(down.retry_after)},
                         request_id=request_id)


class Misconfigured(EnvelopeError):
    """The shared state refuses the server's configuration (credentials, TLS, permissions): 500
    with the cause, never a "retry shortly"; the operator fixes it, a client's retry does not."""

    status = MISCONFIGURED

    def __init__(self, wrong: BackendMisconfigured, request_id: Any = None) -> None:
        super().__init__(wrong.message, code=INTERNAL_ERROR, request_id=request_id)


def fault_refusal(fault: BackendFault, request_id: Any = None) -> EnvelopeError:
    """The refusal a shared-state fault is answered with: 503 to retry, or 500 naming the cause."""
    if isinstance(fault, BackendUnavailable):
        return Unavailable(fault, request_id)
    return Misconfigured(cast(BackendMisconfigured, fault), request_id)  # the only other kind


# --- refusals with a plain-text body ---------------------------------------------------------------
class PlainError(Exception):
    """A request refused before it is MCP at all, answered in plain text."""

    status: ClassVar[int] = HTTPStatus.BAD_REQUEST
    #: The class's words; an instance keeps the text it was raised with.
    text: str = "Bad Request"

    def __init__(self, text: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(text or self.text)
        self.text = text or self.text
        self.headers = headers or {}


class BadHostRequest(PlainError):
    """A host's request that cannot be served as sent (the text says why)."""


class NotFound(PlainError):
    status = HTTPStatus.NOT_FOUND
    text = "Not Found"


class MethodNotAllowed(PlainError):
    status = HTTPStatus.METHOD_NOT_ALLOWED
    text = "Method Not Allowed"

    def __init__(self, allow: str, text: str | None = None) -> None:
        super().__init__(text, {"Allow": allow})


class InvalidHost(PlainError):
    """DNS-rebinding protection: a ``Host`` that ``transport_security`` does not allow."""

    status = HTTPStatus.MISDIRECTED_REQUEST
    text = "Invalid Host header"


class InvalidOrigin(PlainError):
    """A browser page of an origin that may not drive this endpoint."""

    status = HTTPStatus.FORBIDDEN
    text = "Invalid Origin header"


class HostBodyTooLarge(PlainError):
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    text = "Request body too large"


class RouteFailed(PlainError):
    """A custom route raised, or returned something a server cannot send."""

    status = HTTPStatus.INTERNAL_SERVER_ERROR
    text = "Internal Server Error"
