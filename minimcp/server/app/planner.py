"""``MCPServer``'s answer to the core's one question about a request (``core/plan.py``).

A ``tools/call`` finds its tool here, once; the plan carries the tool down with what the layers
below need of it (its timeout, whether it can send anything, its scopes, its input schema), so
neither the HTTP edge nor the dispatcher nor the ``tools/call`` handler looks it up again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from minimcp.server.core.plan import Plan, listing

if TYPE_CHECKING:
    from minimcp.server.app.tools import Tool


class Registries(Protocol):
    """What the planner reads of the server it plans for (``MCPServer``)."""

    component_filter: Callable[..., bool] | None
    listings_vary_by_user: bool

    def get_tool(self, name: Any) -> Tool | None: ...


class RegistryPlanner:
    """Plans from a server's registries as they are when the request arrives."""

    __slots__ = ("_server",)

    def __init__(self, server: Registries) -> None:
        self._server = server

    def plan(self, method: str, params: Any) -> Plan:
        server = self._server
        name = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
        if not isinstance(name, str):
            varies = listing(method) and (bool(server.listings_vary_by_user) or server.component_filter is not None)
            return Plan(method, private_listing=varies)
        tool = server.get_tool(name)
        # Only the Context can send (the tool's own, its resolvers', a task's, the component filter's).
        silent = server.component_filter is None and (tool is None or not tool.can_send)
        if tool is None:
            return Plan(method, name, silent=silent)
        return Plan(method, name, tool, timeout=tool.timeout, silent=silent,
                    required_scopes=tuple(tool.required_scopes),
                    header_schema=tool.parameters if tool.header_routed else None)
