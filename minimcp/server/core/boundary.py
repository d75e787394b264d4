"""``RequestStateBoundary``: the low-level server's middleware that seals a handler's own ``requestState``.

``MCPServer`` seals its rounds itself (``minimcp.server.core.rounds``); a low-level handler that
answers ``input_required`` with a state of its own in plain text gets it sealed by this boundary on
the way out and opened again on the way in, bound to the request as every state is.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from minimcp.server.core.rounds import AnswerBook, Binding, open_book, seal
from minimcp.server.core.sealing import RequestStateSecurity
from minimcp.types import InputRequiredResult
from minimcp.types.methods import METHODS

__all__ = ["RequestStateBoundary"]


class RequestStateBoundary:
    """Low-level server middleware that seals ``requestState`` on the way out and opens it on the way in.

    ``server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=server.name))``
    lets a low-level handler return ``InputRequiredResult(request_state="plain text")`` and read the
    same plain text back on the next round, while the client only ever holds a sealed token bound to
    the request. ``MCPServer`` needs none: its rounds are sealed the same way already.
    """

    def __init__(self, security: RequestStateSecurity, *, default_audience: str | None) -> None:
        self._security = security
        self._audience = default_audience

    def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        row = METHODS.get(ctx.method)
        if row is None or not row.asks:
            return call_next(ctx)
        binding = Binding(self._security, ctx, self._audience)
        state = (ctx.params or {}).get("requestState")
        if state is not None:
            book = open_book(self._security, binding, state, None)
            ctx = dataclasses.replace(ctx, params={**ctx.params, "requestState": book.handler_state})
        result = call_next(ctx)
        if isinstance(result, InputRequiredResult) and result.request_state is not None:
            payload = AnswerBook({}, {}, {}, None).payload(binding, result.request_state)
            result = result.model_copy(update={"request_state": seal(self._security, payload)})
        elif isinstance(result, dict) and result.get("resultType") == "input_required" \
                and isinstance(result.get("requestState"), str):  # the wire form call_next returns
            payload = AnswerBook({}, {}, {}, None).payload(binding, result["requestState"])
            result = {**result, "requestState": seal(self._security, payload)}
        return result
