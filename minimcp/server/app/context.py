"""``Context``: what a tool, resolver, resource or prompt knows about the request it serves.

One ``Context`` per request, bound to that request's outbox and era. Asking the user (or the
client's model, or its roots) goes through ``Context.questions``, the strategy the request's era
picked (``minimcp.server.core.questions``): on a legacy connection the question travels as a
server-to-client request and the worker blocks until the answer arrives; on a 2026-07-28 request it
is looked up among the answers recorded so far, and a miss ends the pass with ``input_required``.
The tool code is the same on both.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from typing_extensions import TypeVar as TypeVarWithDefault

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError
from minimcp.server.core.outbox import Outbox
from minimcp.server.app.elicitation import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    UrlElicitationResult,
    form_schema,
    outcome_of,
)
from minimcp.server.core.context import ServerRequestContext, ServerSession
from minimcp.server.core.ports import SubscriptionBus
from minimcp.server.core.questions import Questions
from minimcp.server.core.sessions import Connection
from minimcp.shared.exceptions import MCPDeprecationWarning
from minimcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from minimcp.types import (
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ClientCapabilities,
    InputResponse,
    LoggingLevel,
    guess_input_response,
)

if TYPE_CHECKING:
    from minimcp.server.auth.provider import AccessToken

LifespanT = TypeVar("LifespanT")
ModelT = TypeVar("ModelT", bound=BaseModel)
RequestT = TypeVarWithDefault("RequestT", default=Any)


class ReadResourceContents:
    """One piece of a resource as ``ctx.read_resource`` hands it back."""

    def __init__(self, content: str | bytes, mime_type: str | None) -> None:
        self.content = content
        self.mime_type = mime_type


class ContextServer(Protocol):
    """The ``MCPServer`` serving a request, as its ``Context`` uses it (``ctx.mcp_server``): the
    host's user, the server's own resources, whether a body may ask on 2026-07-28, and the bus
    ``ctx.notify_*`` publishes on."""

    @property
    def name(self) -> str: ...

    @property
    def elicit_replay(self) -> bool: ...

    @property
    def subscriptions(self) -> SubscriptionBus: ...

    def host_user(self) -> Any: ...

    def read_resource(self, uri: str, context: Context[Any, Any] | None = None) -> Iterable[ReadResourceContents]: ...


def missing_capability(what: str, required: dict[str, Any], asker: str | None = None) -> MCPError:
    """The -32021 error for a question the client never declared it can answer."""
    suffix = f" required by resolver '{asker}'" if asker else ""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Client did not declare the {what} capability{suffix}",
        {"requiredCapabilities": required},
    )


def elicitation_gate(connection: Connection, mode: str, asker: str | None = None) -> None:
    """Refuse, before sending, an elicitation the client could not answer.

    A body question to a client with no elicitation at all fails as the client itself would
    (``Elicitation not supported``); a client lacking only the mode gets -32021. A bare
    ``elicitation: {}`` counts as form support.
    """
    declared = connection.capability("elicitation")
    if declared is None:
        if asker is None:
            raise MCPError(INVALID_REQUEST, "Elicitation not supported")
        raise missing_capability(f"{mode} elicitation", {"elicitation": {mode: {}}}, asker)
    url = declared.get("url")
    if declared.get(mode) is None and not (mode == "form" and url is None):
        raise missing_capability(f"{mode} elicitation", {"elicitation": {mode: {}}}, asker)


class Context(Generic[LifespanT, RequestT]):
    """The request being served. Thread-safe: a tool may use it from threads it starts.

    The second type parameter, as in the official ``Context[AppState, Any]``, types ``ctx.request``.
    """

    def __init__(self, request_context: ServerRequestContext[LifespanT, Any], mcp_server: ContextServer,
                 questions: Questions | None = None, input_responses: dict[str, Any] | None = None,
                 request_state: str | None = None) -> None:
        self._rc = request_context
        self._mcp = mcp_server
        session = request_context.session
        #: How a question reaches the client: chosen once, by the request's era (``Era.rounds``
        #: hands in the strategy of a round; elsewhere the era's plain one).
        self.questions: Questions = questions or session.connection.era.questions(session, request_context.request_id)
        self._input_responses = input_responses
        self._request_state = request_state
        # _lock guards _body_questions: tool code may ask from threads it starts.
        self._lock = threading.Lock()
        self._body_questions = 0

    def serving(self, request_context: ServerRequestContext[Any, Any], mcp_server: ContextServer) -> Context[Any, Any]:
        """This request as another server sees it that serves part of it (a mounted server,
        ``MCPServer.mount``): its own request context and server, on this request's round (its
        questions, the answers so far, the handler's state), so what it asks reaches this
        request's client in either era."""
        return Context(request_context, mcp_server, self.questions, self._input_responses, self._request_state)

    # --- what the request is -------------------------------------------------------------------
    @property
    def request_context(self) -> ServerRequestContext[LifespanT, Any]:
        return self._rc

    @property
    def request_id(self) -> str:
        return str(self._rc.request_id)

    @property
    def session(self) -> ServerSession:
        return self._rc.session

    @property
    def mcp_server(self) -> ContextServer:
        return self._mcp

    @property
    def user(self) -> Any:
        """The host application's user making this call (a Django ``User``, Flask-Login's
        ``current_user``), when the server lives in one (``minimcp.flask``, ``minimcp.django``)."""
        return self._mcp.host_user()

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
    def input_responses(self) -> dict[str, InputResponse] | None:
        """The client's answers to an earlier round, by key, typed as the official SDK types them
        (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``)."""
        if self._input_responses is None:
            return None
        return {key: guess_input_response(value) for key, value in self._input_responses.items()}

    @property
    def request_state(self) -> str | None:
        return self._request_state

    @property
    def cancelled(self) -> bool:
        return self._outbox.cancelled.is_set()

    @property
    def _outbox(self) -> Outbox:
        outbox = self._rc.outbox
        assert outbox is not None, "a Context is built for a request, which always has an outbox"
        return outbox

    # --- reading this server's resources --------------------------------------------------------
    def read_resource(self, uri: str) -> Iterable[ReadResourceContents]:
        """Read one of this server's resources from inside a handler. Raises ``ResourceNotFoundError``
        or ``ResourceError``, which a tool that lets it escape reports as its own failure."""
        return self._mcp.read_resource(str(uri), self)

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
        params = self._rc.session.connection.era.url_elicitation(
            {"mode": "url", "message": message, "url": url}, elicitation_id)
        return outcome_of(self._ask_body("url", "elicitation/create", params), None)  # type: ignore[return-value]

    def _ask_body(self, mode: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self._outbox.done:
            raise ValueError("Context is not available outside of a request")
        connection = self._rc.session.connection
        if not connection.era.body_questions(self._mcp.elicit_replay):
            raise jsonrpc.NoBackChannelError(method)
        self.questions.ready(method)  # a stateless endpoint names its missing back-channel first
        with self._lock:
            key = f"elicit:{self._body_questions}"
            self._body_questions += 1
        return self.questions.ask(key, method, params, lambda: elicitation_gate(connection, mode))

    # --- telling the client --------------------------------------------------------------------
    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` for the caller's token; a no-op when it sent none."""
        self._rc.session.report_progress(progress, total, message)

    def log(self, level: LoggingLevel, data: Any, *, logger_name: str | None = None) -> None:
        """Protocol logging (deprecated at 2026-07-28; prefer the ``logging`` module)."""
        warnings.warn("protocol logging is deprecated; use the logging module", MCPDeprecationWarning, stacklevel=2)
        self._rc.session.send_log_message(level, data, logger_name, self._rc.request_id)

    def close_sse_stream(self) -> None:
        """End this request's SSE connection now; the request keeps running (SEP-1699 polling).

        On a resumable stream (a legacy 2025-11-25 session) the client reconnects after the
        announced ``retry`` interval with ``Last-Event-ID`` and receives everything sent since,
        including the result. Elsewhere there is nothing to reconnect to, so this is a no-op.
        """
        self._outbox.close_stream()

    def close_standalone_sse_stream(self) -> None:
        """End the session's standalone GET stream now: the client opens another, as clients do when
        it ends (minimcp's after a second). What is sent while it is away is dropped, as that stream
        keeps no log; a no-op where there is no such stream (2026-07-28)."""
        self.session.connection.close_standalone_stream()

    # --- telling every client that listens --------------------------------------------------------
    def notify_tools_changed(self) -> None:
        """Publish that the tool list changed on the server's bus: the 2026-07-28 listens that asked
        for it hear it. A legacy client does not, as officially: ``ctx.session.send_tool_list_changed()``
        tells the session of this call."""
        self._mcp.subscriptions.publish(ToolsListChanged())

    def notify_prompts_changed(self) -> None:
        """Publish that the prompt list changed (listens only; ``ctx.session.send_prompt_list_changed()``
        tells a legacy session)."""
        self._mcp.subscriptions.publish(PromptsListChanged())

    def notify_resources_changed(self) -> None:
        """Publish that the resource list changed (listens only; ``ctx.session.send_resource_list_changed()``
        tells a legacy session)."""
        self._mcp.subscriptions.publish(ResourcesListChanged())

    def notify_resource_updated(self, uri: str) -> None:
        """Publish that ``uri`` changed: the listens and the legacy sessions subscribed to exactly that
        URI hear it (the official SDK tells legacy subscribers nothing: there, a handler calls
        ``ctx.session.send_resource_updated(uri)``)."""
        self._mcp.subscriptions.publish(ResourceUpdated(uri=str(uri)))

    def debug(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("debug", data, logger_name=logger_name)

    def info(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("info", data, logger_name=logger_name)

    def warning(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("warning", data, logger_name=logger_name)

    def error(self, data: Any, *, logger_name: str | None = None) -> None:
        self.log("error", data, logger_name=logger_name)
