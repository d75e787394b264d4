"""``ServerRequestContext``: what a low-level handler receives with its params, as in the official SDK.

One per request, built by the dispatcher. ``session`` is bound to the request (progress and
``related_request_id`` notifications ride its stream), ``transport`` describes how the message
arrived, and ``outbox`` is the request's channel, which the ``MCPServer`` tier builds on.

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

from minimcp.shared.transport_context import TransportContext

if TYPE_CHECKING:
    from minimcp.server.core.outbox import Outbox
    from minimcp.server.core.era import Era
    from minimcp.server.core.plan import Plan
    from minimcp.server.core.served import ServingServer
    from minimcp.server.core.server_session import ServerSession
    from minimcp.types import RequestId

__all__ = ["CallNext", "HandlerResult", "ServerMiddleware", "ServerRequestContext"]

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

