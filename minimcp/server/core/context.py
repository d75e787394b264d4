"""What a low-level handler is handed with its params, as in the official SDK: ``ServerRequestContext``
and its ``ServerSession``.

One of each per request, built by the dispatcher. ``session`` is the session as the handler sees
it, bound to the request (progress and ``related_request_id`` notifications ride its stream) over
the ``Connection`` that outlives it; ``transport`` describes how the message arrived, and
``outbox`` is the request's channel, which the ``MCPServer`` tier builds on.

Server middleware (``ServerMiddleware``) is a plain ``def middleware(ctx, call_next)`` listed on
``Server.middleware`` (or ``MCPServer(middleware=[...])``). It wraps every message the server
receives, in both eras: ``call_next(ctx)`` runs the method lookup, the ``initialize`` gate, params
validation, the handler and the shaping of its result for the wire, and returns that result as the
client will get it (a dict), or raises the ``MCPError`` the client will get. Notifications pass
through it too (``ctx.request_id is None``; ``call_next`` returns ``None``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol

from pydantic import BaseModel
from typing_extensions import TypeVar

from minimcp import jsonrpc
from minimcp.server.core.asking import QuestionProgress, checked_timeout
from minimcp.shared.transport_context import TransportContext
from minimcp.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitResult,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    ListRootsResult,
    LoggingLevel,
    RequestId,
    dump,
)

if TYPE_CHECKING:
    from minimcp.server.core.outbox import Outbox
    from minimcp.server.core.era import Era
    from minimcp.server.core.plan import Plan
    from minimcp.server.core.served import ServingServer
    from minimcp.server.core.sessions import Connection

__all__ = ["CallNext", "HandlerResult", "ServerMiddleware", "ServerRequestContext", "ServerSession"]

LifespanContextT = TypeVar("LifespanContextT", default=Any)
RequestT = TypeVar("RequestT", default=Any)

#: The transport of a call made in-process (``mcp.call_tool(...)``): no client, no channel back.
DIRECT = TransportContext(kind="direct", can_send_request=False)


@dataclass(kw_only=True)
class ServerRequestContext(Generic[LifespanContextT, RequestT]):
    """The request a handler serves and the transport it came by."""

    session: ServerSession
    lifespan_context: LifespanContextT
    protocol_version: str
    method: str
    params: dict[str, Any] | None = None
    request_id: RequestId | None = None
    meta: dict[str, Any] | None = None
    transport: TransportContext = field(default=DIRECT)
    server: ServingServer | None = None
    outbox: Outbox | None = None
    era: Era | None = None
    #: What the request is, worked out once when it arrived (``core/plan.py``): a handler finds
    #: its target there instead of looking it up again.
    plan: Plan | None = None

    @property
    def request(self) -> Any:
        """The werkzeug ``Request`` over WSGI, else ``None``: for user code, never read by the core."""
        return self.transport.request

    def close_sse_stream(self) -> None:
        """End this request's SSE connection now; the request keeps running (SEP-1699 polling)."""
        if self.outbox is not None:
            self.outbox.close_stream()

    def close_standalone_sse_stream(self) -> None:
        """End the session's standalone GET stream now; the client opens another (a no-op where
        there is none: 2026-07-28, stateless HTTP, a client that never opened one)."""
        self.session.connection.close_standalone_stream()


HandlerResult = BaseModel | dict[str, Any] | None
"""What a request handler or a middleware returns: a result model, a result in wire form, or
``None`` for an empty result."""

CallNext = Callable[[ServerRequestContext[Any, Any]], HandlerResult]
"""The rest of the chain: call it with the context (or ``dataclasses.replace(ctx, params=...)``,
to change what the handler is given; the params are validated after the middleware)."""

_MiddlewareLifespanT = TypeVar("_MiddlewareLifespanT")


class ServerMiddleware(Protocol[_MiddlewareLifespanT]):
    """``(ctx, call_next) -> result`` around every message the server receives, outermost first.

    It sees what the client sent before anything is checked (``ctx.method``, the raw ``ctx.params``),
    so it observes ``initialize``, unknown methods and refused params as well as the calls that
    succeed; a refusal reaches it as the ``MCPError`` (or ``pydantic.ValidationError``) that
    ``call_next`` raises. Raising before ``call_next`` refuses the message; returning without calling
    it answers in the handler's place (with a result in wire form). A legacy question the handler
    asks (``ctx.elicit``) happens inside ``call_next``; a 2026-07-28 round ends it with an
    ``input_required`` result, and the retry is a new request through the chain.

    A middleware whose class sets ``sends_nothing = True`` promises to send the client nothing of
    its own (no notification, no question): it only observes, refuses or answers. Where every one
    does, a legacy call of a tool that can send nothing runs on the thread that received it
    (``Plan.silent``); any other middleware keeps such calls on the worker pool.
    """

    def __call__(self, ctx: ServerRequestContext[_MiddlewareLifespanT, Any], call_next: CallNext) -> HandlerResult: ...


class ServerSession:
    """The session as one request's handler sees it: the official ``ServerSession`` API, synchronous.

    ``related_request_id`` picks the channel as in the official SDK: present, the message rides
    that request's stream; absent, the connection's standalone channel. Progress goes to this
    request's caller. Everything the connection knows is read through.
    """

    def __init__(self, connection: Connection, outbox: Outbox | None = None, request_id: RequestId | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.connection = connection
        self._outbox = outbox
        self._request_id = request_id
        self._meta = meta

    # --- what the connection knows ---------------------------------------------------------------
    @property
    def legacy(self) -> bool:
        return self.connection.era.legacy

    @property
    def protocol_version(self) -> str:
        return self.connection.protocol_version

    @property
    def client_capabilities(self) -> ClientCapabilities:
        return self.connection.client_capabilities

    @property
    def client_info(self) -> Implementation | None:
        return self.connection.client_info

    @property
    def client_params(self) -> InitializeRequestParams | None:
        return self.connection.client_params

    @property
    def can_send_request(self) -> bool:
        return self.connection.can_send_request and (self._outbox is None or self._outbox.can_request)

    def check_client_capability(self, capability: ClientCapabilities) -> bool:
        return self.connection.check_client_capability(capability)

    # --- notifications ---------------------------------------------------------------------------
    def _own(self, related_request_id: RequestId | None) -> bool:
        # ``ctx.request_id`` is the id as text, as officially: it names this request whatever its JSON type.
        return related_request_id is not None and str(related_request_id) == str(self._request_id)

    def _ask(self, method: str, params: dict[str, Any], related_request_id: RequestId | None,
             timeout: float | None = None, on_progress: QuestionProgress | None = None) -> dict[str, Any]:
        """Ask on the channel ``related_request_id`` names; this request's own id may come as text."""
        related = self._request_id if self._own(related_request_id) else related_request_id
        return self.connection.ask(method, params, related, timeout, on_progress)

    def _route(self, method: str, params: dict[str, Any] | None, related_request_id: RequestId | None) -> None:
        if self._own(related_request_id) and self._outbox is not None:
            self._outbox.send(jsonrpc.notification(method, params))
        else:
            self.connection.notify(method, params, related_request_id=related_request_id)

    def send_notification(self, notification: BaseModel | str, related_request_id: RequestId | None = None,
                          params: dict[str, Any] | None = None) -> None:
        """Send a notification model (or a method name and ``params``) to the client."""
        if isinstance(notification, BaseModel):
            wire = dump(notification)
            self._route(wire["method"], wire.get("params"), related_request_id)
        else:
            self._route(notification, params, related_request_id)

    def send_log_message(self, level: LoggingLevel, data: Any, logger: str | None = None,
                         related_request_id: RequestId | None = None) -> None:
        """Protocol logging; on 2026-07-28 only what the request opted in to, on its own stream."""
        if not self.connection.log_enabled(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._route("notifications/message", params, self.connection.era.log_stream(related_request_id, self._request_id))

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Progress for the caller's token; a no-op when the request carried none."""
        token = (self._meta or {}).get("progressToken")
        if token is not None:
            self.send_progress_notification(token, progress, total, message, self._request_id)

    def send_progress_notification(self, progress_token: str | int, progress: float, total: float | None = None,
                                   message: str | None = None, related_request_id: RequestId | None = None) -> None:
        params: dict[str, Any] = {"progressToken": progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._route("notifications/progress", params, related_request_id)

    def send_elicit_complete(self, elicitation_id: str, related_request_id: RequestId | None = None) -> None:
        self.connection.era.send_elicit_complete(self, elicitation_id, related_request_id)

    def send_tool_list_changed(self) -> None:
        self._route("notifications/tools/list_changed", None, None)

    def send_resource_list_changed(self) -> None:
        self._route("notifications/resources/list_changed", None, None)

    def send_prompt_list_changed(self) -> None:
        self._route("notifications/prompts/list_changed", None, None)

    def send_resource_updated(self, uri: Any) -> None:
        self._route("notifications/resources/updated", {"uri": str(uri)}, None)

    # --- questions (legacy connections) ----------------------------------------------------------
    def send_request(self, request: BaseModel | str, result_type: Any = None,
                     request_read_timeout_seconds: float | None = None, metadata: Any = None,
                     progress_callback: QuestionProgress | None = None, *,
                     related_request_id: RequestId | None = None) -> Any:
        """Ask the client and wait, ``request_read_timeout_seconds`` at most when given (else the
        server's ``back_channel_timeout``); ``progress_callback`` hears the progress the client
        reports while it works on the answer (a legacy client's ``send_progress_notification``).

        ``send_request(request_model, ResultType)`` returns the validated result, as the official
        SDK does; ``send_request("roots/list", params)`` returns the raw result object.
        """
        related = getattr(metadata, "related_request_id", None) if metadata is not None else related_request_id
        timeout = checked_timeout(request_read_timeout_seconds, "request_read_timeout_seconds")
        if isinstance(request, BaseModel):
            wire = dump(request)
            method, params, model = wire["method"], wire.get("params") or {}, result_type
        else:
            method, params, model = request, result_type or {}, None
        result = self._ask(method, params, related, timeout, progress_callback)
        return result if model is None else model.model_validate(result)

    def elicit(self, message: str, requested_schema: dict[str, Any],
               related_request_id: RequestId | None = None) -> ElicitResult:
        return self.elicit_form(message, requested_schema, related_request_id)

    def elicit_form(self, message: str, requested_schema: dict[str, Any],
                    related_request_id: RequestId | None = None) -> ElicitResult:
        params = {"mode": "form", "message": message, "requestedSchema": requested_schema}
        return ElicitResult.model_validate(self._ask("elicitation/create", params, related_request_id))

    def elicit_url(self, message: str, url: str, elicitation_id: str,
                   related_request_id: RequestId | None = None) -> ElicitResult:
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return ElicitResult.model_validate(self._ask("elicitation/create", params, related_request_id))

    def create_message(self, messages: list[Any], *, max_tokens: int, related_request_id: RequestId | None = None,
                       **options: Any) -> CreateMessageResult | CreateMessageResultWithTools:
        """Legacy-only sampling from the body (deprecated; a resolver returning ``Sample`` works in both eras)."""
        params = dump(CreateMessageRequestParams(messages=messages, max_tokens=max_tokens, **options))
        result = self._ask("sampling/createMessage", params, related_request_id)
        model = CreateMessageResultWithTools if isinstance(result.get("content"), list) else CreateMessageResult
        return model.model_validate(result)

    def list_roots(self, related_request_id: RequestId | None = None) -> ListRootsResult:
        """Legacy-only roots from the body (deprecated; a resolver returning ``ListRoots`` works in both eras)."""
        return ListRootsResult.model_validate(self._ask("roots/list", {}, related_request_id))

    def send_ping(self) -> EmptyResult:
        return EmptyResult.model_validate(self._ask("ping", {}, None))
