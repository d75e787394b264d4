"""What one request is, worked out once when it arrives and read by every layer below.

Several layers need the same few facts of a request: the HTTP edge a tool's scopes and input
schema, the dispatcher its timeout and whether it can send anything, the handler the tool itself.
The edge (or the dispatcher, for a transport that checks nothing first) asks the ``Planner`` once
and hands the frozen ``Plan`` down: the edge checks scopes and ``Mcp-Param-*`` headers against it,
the dispatcher admits and schedules by it, the era's rounds run by it, and the handler finds its
target in it, so nobody calls back up for the same request.

This module knows no tier: the ``Planner`` is a port (``core/ports.py``) the tier above implements
(``MCPServer`` plans from its registries); a bare ``Server`` plans from the per-tool answers of
its ``ServerHooks`` (``HookPlanner``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from minimcp.types.methods import METHODS


@dataclass(frozen=True, slots=True)
class Plan:
    """One request, as the layers below need it. For a method that names no component (a listing,
    ``ping``) only ``method`` and ``private_listing`` say anything. The era is not the planner's
    to say: the core decides it from the message before anyone plans, and the request's
    connection carries it."""

    method: str
    #: The component's name as the request gave it (a ``tools/call``'s ``name``); a middleware that
    #: passes a changed name on makes ``target`` stale, which its reader checks against this.
    name: str | None = None
    #: The component the request names, found once (the tier's own object: ``MCPServer``'s ``Tool``);
    #: ``None`` when there is none by that name or the planner does not look.
    target: Any = None
    #: Seconds the call may run before its caller is answered with a timeout; ``None``: no limit.
    timeout: float | None = None
    #: Whether the handler can send the client nothing before its answer (no question, log or
    #: progress): such a call may run on the thread that received it (the dispatcher also asks
    #: the middleware, which the planner does not see).
    silent: bool = False
    #: The OAuth scopes the call needs beyond the endpoint's; the HTTP edge answers 403 without them.
    required_scopes: tuple[str, ...] = ()
    #: The input schema the ``Mcp-Param-*`` headers of a 2026-07-28 call are checked against.
    header_schema: Mapping[str, Any] | None = None
    #: Whether a listing depends on who asks, so a public cache hint on it becomes private.
    private_listing: bool = False


@dataclass(frozen=True, slots=True)
class HookPlanner:
    """A bare ``Server``'s planner: a tool call's timeout, silence, scopes and schema from the
    callables a ``ServerHooks`` was given, each asked once, while planning."""

    input_schema: Callable[[str], Mapping[str, Any] | None] | None = None
    required_scopes: Callable[[str], list[str]] | None = None
    timeout: Callable[[str], float | None] | None = None
    silent: Callable[[str], bool] | None = None
    listings_vary: Callable[[], bool] = bool

    def plan(self, method: str, params: Any) -> Plan:
        name = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
        if not isinstance(name, str):
            return Plan(method, private_listing=listing(method) and self.listings_vary())
        return Plan(method, name,
                    timeout=self.timeout(name) if self.timeout is not None else None,
                    silent=self.silent(name) if self.silent is not None else False,
                    required_scopes=tuple(self.required_scopes(name)) if self.required_scopes is not None else (),
                    header_schema=self.input_schema(name) if self.input_schema is not None else None)


def listing(method: str) -> bool:
    """Whether ``method`` lists components (what a cache hint's scope may have to narrow)."""
    found = METHODS.get(method)
    return found is not None and found.listing
