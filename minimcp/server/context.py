"""``ServerRequestContext``: what a low-level handler receives with its params, as in the official SDK.

One per request, built by the dispatcher. ``session`` is bound to the request (progress and
``related_request_id`` notifications ride its stream), ``transport`` describes how the message
arrived, and ``outbox`` is the request's channel, which the ``MCPServer`` tier builds on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, Union

from pydantic import BaseModel
from typing_extensions import TypeVar

from minimcp.shared.transport_context import TransportContext

if TYPE_CHECKING:
    from minimcp.server.lowlevel.calls import Outbox
    from minimcp.server.lowlevel.era import Era
    from minimcp.server.lowlevel.server import Server
    from minimcp.server.lowlevel.sessions import ServerSession
    from minimcp.types import RequestId

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
    server: Server[Any] | None = None
    outbox: Outbox | None = None
    era: Era | None = None

    @property
    def request(self) -> Any:
        """The werkzeug ``Request`` over WSGI, else ``None``: for user code, never read by the core."""
        return self.transport.request

    def close_sse_stream(self) -> None:
        """End this request's SSE connection now; the request keeps running (SEP-1699 polling)."""
        if self.outbox is not None:
            self.outbox.close_stream()


#: What a request handler (or a layer around one) may return; the core turns each into a result.
HandlerResult = Union[BaseModel, dict[str, Any], None]

#: Runs the rest of a chain of layers, and the handler at its end, with the context given.
CallNext = Callable[["ServerRequestContext[Any, Any]"], HandlerResult]

__all__ = ["CallNext", "HandlerResult", "ServerRequestContext"]
