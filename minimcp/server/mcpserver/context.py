"""``Context``: what a tool, resolver, resource or prompt knows about the request it serves.

One ``Context`` per request, bound to that request's outbox and era. Asking the user (or the
client's model, or its roots) goes through ``RequestContext.questions``, a strategy chosen by the
dispatcher for the connection's era: on a legacy connection the question travels as a
server-to-client request and the worker blocks until the answer arrives; on a 2026-07-28 request it
is looked up among the answers recorded so far, and a miss ends the pass with ``input_required``.
The tool code is the same on both.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, Protocol, TypeVar

from pydantic import BaseModel

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError
from minimcp.server.lowlevel.calls import Outbox
from minimcp.server.elicitation import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    UrlElicitationResult,
    form_schema,
    outcome_of,
)
from minimcp.server.lowlevel.sessions import ServerSession
from minimcp.shared.exceptions import MCPDeprecationWarning
from minimcp.shared.transport_context import TransportContext
from minimcp.types import (
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ClientCapabilities,
    LoggingLevel,
    RequestId,
)

if TYPE_CHECKING:
    from minimcp.server.auth.provider import AccessToken
    from minimcp.server.mcpserver.server import MCPServer

LifespanT = TypeVar("LifespanT")
ModelT = TypeVar("ModelT", bound=BaseModel)


Gate = Callable[[], None]


class Questions(Protocol):
    """How a question reaches the client on this request's era."""

    def ask(self, key: str, method: str, params: dict[str, Any], gate: Gate) -> dict[str, Any]:
        """The client's answer (a JSON-RPC ``result`` object) to ``method`` with ``params``.

        ``gate`` raises when the client did not declare it can answer; it runs only when the question
        must actually go out, so an answer already recorded (2026-07-28) needs no declaration.
        """


class LegacyQuestions:
    """Legacy era: a server-to-client request on the call's own stream; the worker blocks."""

    def __init__(self, session: ServerSession, request_id: RequestId) -> None:
        self._session = session
        self._request_id = request_id

    def ask(self, key: str, method: str, params: dict[str, Any], gate: Gate) -> dict[str, Any]:
        gate()
        return self._session.send_request(method, params, related_request_id=self._request_id)


#: The transport of a call made in-process (``mcp.call_tool(...)``): no client, no channel back.
DIRECT = TransportContext(kind="direct", can_send_request=False)


@dataclass(kw_only=True)
class RequestContext(Generic[LifespanT]):
    """The request a handler serves and the transport it came by."""

    request_id: RequestId
    meta: dict[str, Any] | None
    session: ServerSession
    lifespan_context: LifespanT
    server: MCPServer
    outbox: Outbox
    questions: Questions
    transport: TransportContext = field(default_factory=lambda: DIRECT)
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    body_questions: int = field(default=0)

    @property
    def request(self) -> Any:
        """The werkzeug ``Request`` over WSGI, else ``None``: for user code, never read by the core."""
        return self.transport.request


def missing_capability(what: str, required: dict[str, Any], asker: str | None = None) -> MCPError:
    """The -32021 error for a question the client never declared it can answer."""
    suffix = f" required by resolver '{asker}'" if asker else ""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Client did not declare the {what} capability{suffix}",
        {"requiredCapabilities": required},
    )


def elicitation_gate(session: ServerSession, mode: str, asker: str | None = None) -> None:
    """Refuse, before sending, an elicitation the client could not answer.

    A body question to a client with no elicitation at all fails as the client itself would
    (``Elicitation not supported``); a client lacking only the mode gets -32021. A bare
    ``elicitation: {}`` counts as form support.
    """
    declared = session.client_capabilities.elicitation
    if declared is None:
        if asker is None:
            raise MCPError(INVALID_REQUEST, "Elicitation not supported")
        raise missing_capability(f"{mode} elicitation", {"elicitation": {mode: {}}}, asker)
    modes = {"form": declared.form, "url": declared.url}
    if modes[mode] is None and not (mode == "form" and declared.url is None):
        raise missing_capability(f"{mode} elicitation", {"elicitation": {mode: {}}}, asker)


class Context(Generic[LifespanT]):
    """The request being served. Thread-safe: a tool may use it from threads it starts."""

    def __init__(self, request_context: RequestContext[LifespanT]) -> None:
        self._rc = request_context
        # _lock guards the body-question counter of request_context.
        self._lock = threading.Lock()

    # --- what the request is -------------------------------------------------------------------
    @property
    def request_context(self) -> RequestContext[LifespanT]:
        return self._rc

    @property
    def request_id(self) -> str:
        return str(self._rc.request_id)

    @property
    def session(self) -> ServerSession:
        return self._rc.session

    @property
    def mcp_server(self) -> MCPServer:
        return self._rc.server

    @property
    def user(self) -> Any:
        """The host application's user making this call (a Django ``User``, Flask-Login's
        ``current_user``), when the server lives in one (``minimcp.flask``, ``minimcp.django``)."""
        return self._rc.server.host_user()

    @property
    def headers(self) -> Mapping[str, str] | None:
        return self._rc.transport.headers

    @property
    def access_token(self) -> AccessToken | None:
        """The caller's verified bearer token on a protected HTTP endpoint (its scopes, subject and
        client), else ``None``. Unlike ``get_access_token()``, it works from threads the tool starts."""
        return self._rc.transport.access_token

    @property
    def protocol_version(self) -> str:
        return self._rc.session.protocol_version

    @property
    def client_capabilities(self) -> ClientCapabilities:
        return self._rc.session.client_capabilities

    @property
    def input_responses(self) -> dict[str, Any] | None:
        return self._rc.input_responses

    @property
    def request_state(self) -> str | None:
        return self._rc.request_state

    @property
    def cancelled(self) -> bool:
        return self._rc.outbox.cancelled.is_set()

    # --- asking the user -----------------------------------------------------------------------
    def elicit(self, message: str, schema: type[ModelT]) -> (
        AcceptedElicitation[ModelT] | DeclinedElicitation | CancelledElicitation
    ):
        """Ask the user to fill a form and wait for the answer; see the module docstring."""
        requested = form_schema(schema)
        params: dict[str, Any] = {"mode": "form", "message": message, "requestedSchema": requested}
        result = self._ask_body("form", "elicitation/create", params)
        return outcome_of(result, schema)  # type: ignore[return-value]

    def elicit_url(self, message: str, url: str, elicitation_id: str) -> UrlElicitationResult:
        """Ask the user to visit ``url``; "accept" means they agreed to go, not that they finished."""
        params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if self._rc.session.legacy:
            params["elicitationId"] = elicitation_id
        return outcome_of(self._ask_body("url", "elicitation/create", params), None)  # type: ignore[return-value]

    def _ask_body(self, mode: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rc = self._rc
        if rc.outbox.done:
            raise ValueError("Context is not available outside of a request")
        if not rc.session.legacy and not rc.server.elicit_replay:
            raise jsonrpc.NoBackChannelError(method)
        with self._lock:
            key = f"elicit:{rc.body_questions}"
            rc.body_questions += 1
        return rc.questions.ask(key, method, params, lambda: elicitation_gate(rc.session, mode))

    # --- telling the client --------------------------------------------------------------------
    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` for the caller's token; a no-op when it sent none."""
        token = (self._rc.meta or {}).get("progressToken")
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._rc.outbox.send(jsonrpc.notification("notifications/progress", params))

    def log(self, level: LoggingLevel, data: Any, *, logger_name: str | None = None) -> None:
        """Protocol logging (deprecated at 2026-07-28; prefer the ``logging`` module)."""
        warnings.warn("protocol logging is deprecated; use the logging module", MCPDeprecationWarning, stacklevel=2)
        if not self._rc.session.log_enabled(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        self._rc.outbox.send(jsonrpc.notification("notifications/message", params))

    def close_sse_stream(self) -> None:
        """End this request's SSE connection now; the request keeps running (SEP-1699 polling).

        On a resumable stream (a legacy 2025-11-25 session) the client reconnects after the
        announced ``retry`` interval with ``Last-Event-ID`` and receives everything sent since,
        including the result. Elsewhere there is nothing to reconnect to, so this is a no-op.
        """
        self._rc.outbox.close_stream()

    # --- telling 2026-07-28 listeners (subscriptions/listen) -------------------------------------
    def notify_tools_changed(self) -> None:
        """Publish ``notifications/tools/list_changed`` to the open listens that asked for it."""
        self._rc.server.dispatcher.listens.publish("notifications/tools/list_changed")

    def notify_prompts_changed(self) -> None:
        """Publish ``notifications/prompts/list_changed`` to the open listens that asked for it."""
        self._rc.server.dispatcher.listens.publish("notifications/prompts/list_changed")

    def notify_resources_changed(self) -> None:
        """Publish ``notifications/resources/list_changed`` to the open listens that asked for it."""
        self._rc.server.dispatcher.listens.publish("notifications/resources/list_changed")

    def notify_resource_updated(self, uri: str) -> None:
        """Publish ``notifications/resources/updated`` to the open listens subscribed to ``uri``."""
        self._rc.server.dispatcher.listens.publish("notifications/resources/updated", {"uri": str(uri)}, uri=str(uri))

    def debug(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("debug", data, logger_name=logger_name)

    def info(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("info", data, logger_name=logger_name)

    def warning(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("warning", data, logger_name=logger_name)

    def error(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("error", data, logger_name=logger_name)
