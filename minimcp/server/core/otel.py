"""``OpenTelemetryMiddleware``: a ``SERVER`` span around every message a server receives.

As in the official SDK, ``Server.middleware`` starts with it wherever ``opentelemetry-api`` is
installed, so it is the outermost layer and sees every message (``initialize``, notifications,
refusals). The span is parented on the trace context the client put in ``_meta``; its name and
attributes are the official ones (``tools/call add``, ``mcp.method.name``, ``gen_ai.tool.name``,
``error.type`` ...). ``minimcp.shared.otel.set_tracing(False)`` makes it a pass-through.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from minimcp.jsonrpc import MCPError
from minimcp.server.core.context import CallNext, HandlerResult, ServerRequestContext
from minimcp.shared import otel
from minimcp.types import INVALID_PARAMS

__all__ = ["OpenTelemetryMiddleware", "default_middleware"]


class OpenTelemetryMiddleware:
    """A ``ServerMiddleware`` making one span per received message."""

    sends_nothing = True  # it records spans; the client gets nothing from it

    def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        parent = otel.received_parent(ctx.meta)
        if parent is otel.NO_SPAN:
            return call_next(ctx)
        target = ctx.params.get("name") if ctx.params else None
        attributes: dict[str, Any] = {"mcp.method.name": ctx.method, "mcp.protocol.version": ctx.protocol_version}
        if ctx.request_id is not None:
            attributes["jsonrpc.request.id"] = str(ctx.request_id)
        if ctx.method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            if isinstance(target, str):
                attributes["gen_ai.tool.name"] = target
        elif ctx.method == "prompts/get" and isinstance(target, str):
            attributes["gen_ai.prompt.name"] = target
        with otel.receiving(otel.span_name(ctx.method, ctx.params), attributes, parent) as span:
            try:
                result = call_next(ctx)
            except MCPError as exc:
                otel.mark_error(span, exc.code, exc.message)
                raise
            except ValidationError:
                # The answer's own words: pydantic's message would echo the client's input.
                otel.mark_error(span, INVALID_PARAMS, "Invalid request parameters")
                raise
            except Exception as exc:
                otel.failed(span, exc)
                raise
            if ctx.method == "tools/call" and _reports_error(result):
                otel.tool_failed(span)
            return result

    def __repr__(self) -> str:
        return "OpenTelemetryMiddleware()"


def _reports_error(result: HandlerResult) -> bool:
    """Whether a ``tools/call`` result reaches the wire as a tool error."""
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


def default_middleware() -> list[Any]:
    """What ``Server.middleware`` starts with: the span middleware where OpenTelemetry is installed,
    as the official list starts; nothing otherwise."""
    return [OpenTelemetryMiddleware()] if otel.available() else []

