"""What the tiers above give the core: a handler per method (``HandlerEntry``) and the hooks a
server built on the low-level one answers the core and the HTTP edge with (``ServerHooks``).

Both are plain records, kept beneath ``Server`` so that the dispatcher and the transports read
them without importing the server that holds them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel

if TYPE_CHECKING:
    from minimcp.server.auth.options import AuthOptions
    from minimcp.server.core.ports import Planner

__all__ = ["Handler", "HandlerEntry", "ServerHooks"]

Handler = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class HandlerEntry:
    """A registered handler and how its params are read before it runs: validated against
    ``params_type``, or by ``read`` where the tier that registered it gave a cheaper reader."""

    params_type: type[BaseModel]
    handler: Handler
    #: What the handler is given of the params, for one that reads only a few of them; it answers
    #: ``params_type.model_validate`` for whatever it does not take as it is, so what validation
    #: refuses is refused alike. ``None``: validated against ``params_type``.
    read: Callable[[dict[str, Any]], Any] | None = None
    #: The handler's ``params`` argument from the request's raw params: ``read``, else validation
    #: against ``params_type``; chosen once, here.
    params: Callable[[dict[str, Any]], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", self.read or self.params_type.model_validate)


@dataclass(frozen=True)
class ServerHooks:
    """What a server built on this one (``MCPServer``, a host's) answers the core and the HTTP edge
    with, given once to ``Server(hooks=...)``: the tiers above reach the core through this object
    instead of setting its attributes after construction. Each default is a bare server's answer.

    What one request is comes from ``planner``, asked once per request (``core/plan.py``); without
    one, the per-tool callables below are what a bare server's plans are made of."""

    #: The tier's answer to "what is this request?" (``MCPServer`` plans from its registries).
    planner: Planner | None = None

    #: A tool's ``inputSchema`` by name (``None``: unknown tool), for the ``Mcp-Param`` header check.
    get_tool_input_schema: Callable[[str], Mapping[str, Any] | None] | None = None
    #: The OAuth scopes calling one tool needs beyond the endpoint's (``None``: none); the HTTP edge
    #: answers a token without them 403. ``MCPServer`` answers from ``@mcp.tool(required_scopes=...)``.
    get_tool_required_scopes: Callable[[str], list[str]] | None = None
    #: Seconds a ``tools/call`` of one tool may take before the client is answered with a timeout
    #: (``None``: no limit). ``MCPServer`` answers from ``@mcp.tool(timeout=...)``.
    get_tool_timeout: Callable[[str], float | None] | None = None
    #: Whether a call of one tool can send the client nothing before its answer: no question, no log
    #: message, no progress (``MCPServer``: its function takes no ``Context``, settles no resolvers,
    #: never runs as a task, and no component filter sees the call). Such a call runs on the thread
    #: that received it even where a stream could carry questions. ``None``: any tool may send.
    get_tool_silent: Callable[[str], bool] | None = None
    #: Every scope some tool requires, for the protected-resource metadata's ``scopes_supported``.
    list_tool_scopes: Callable[[], list[str]] = list
    #: Whether listings depend on who asks (a host filters tools by permission): a public cache hint
    #: on a 2026-07-28 list result then says ``cacheScope: "private"``. Asked per listing.
    listings_vary: Callable[[], bool] = bool
    #: The context every handler of one request runs in on its worker: called on the thread that
    #: received the request, entered on the worker (a host re-establishes its request there). The
    #: default, ``contextlib.nullcontext``, is not even entered.
    call_scope: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
    #: Whether the requestStates this server seals open only in this process (``MCPServer``'s
    #: default keys without a shared backend): the HTTP edge warns when it serves several processes.
    keys_per_process: Callable[[], bool] = bool
    #: The HTTP edge's authorization (``None``: an open endpoint); ``wsgi_app(auth_options=...)``
    #: (or ``auth=...``) overrides it.
    auth_options: AuthOptions | None = None
