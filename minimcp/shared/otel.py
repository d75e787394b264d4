"""OpenTelemetry spans for MCP messages, and W3C trace context carried in ``_meta`` (SEP-414).

The official SDK traces by default, so a ported program keeps its traces: wherever
``opentelemetry-api`` is installed (``pip install 'minimcp-sync[otel]'``), every request a client or a
server sends gets a ``CLIENT`` span named ``MCP send {method}`` (`` {name}`` for a tool or prompt)
whose context travels in the request's ``_meta`` (``traceparent``, ``tracestate``), and every
message a server receives gets a ``SERVER`` span (``minimcp.server.app.otel``) parented on that
context. Names and attributes are the official SDK's. Without an SDK configured the API's tracer
records nothing and injects nothing, so the wire is unchanged.

One switch turns all of it off: ``set_tracing(False)``, or ``MINIMCP_TRACING=0`` in the
environment for the process's default. Nothing here imports OpenTelemetry when it is not installed,
and where it is, not before the first span: its propagators are found through the installed
packages' entry points, which would double the cost of importing the client.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

#: The instrumentation scope of every span minimcp makes.
TRACER_NAME = "minimcp"

_OFF = {"0", "false", "off", "no"}


def _installed() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry") is not None
    except ValueError:  # a module without a spec stands in for it
        return False


# Whether the extra is installed (optional: without it nothing is traced); False too once importing
# it failed. Like _enabled, a plain bool: flipping one is atomic, and a message in flight when it
# flips simply finishes with or without its span.
_available = _installed()
_enabled = _available and os.environ.get("MINIMCP_TRACING", "1").strip().lower() not in _OFF

# The OpenTelemetry API, imported by _load() on the first span; None until then. Assigning them is
# idempotent, so threads making their first spans at once need no lock. Before a provider is set
# _tracer is the API's proxy, which hands over to the provider set later (as applications do after
# importing their libraries).
trace: Any = None
propagate: Any = None
SpanKind: Any = None
StatusCode: Any = None
_tracer: Any = None


def _load() -> bool:
    """Import the API once; whether it is there (a broken install turns tracing off)."""
    global trace, propagate, SpanKind, StatusCode, _tracer, _available, _enabled
    if _tracer is not None:
        return True
    try:
        from opentelemetry import propagate as propagate_module
        from opentelemetry import trace as trace_module
    except ImportError:
        _available = _enabled = False
        return False
    trace, propagate = trace_module, propagate_module
    SpanKind, StatusCode = trace_module.SpanKind, trace_module.StatusCode
    _tracer = trace_module.get_tracer(TRACER_NAME)
    return True


def available() -> bool:
    """Whether ``opentelemetry-api`` is installed, so spans can be made at all."""
    return _available and _load()


def set_tracing(enabled: bool) -> None:
    """Turn spans and trace-context propagation on or off for the whole process, servers and clients."""
    global _enabled
    _enabled = bool(enabled) and _available


def tracing() -> bool:
    """Whether spans are being made now."""
    return _enabled


#: Whether ``recording()`` has seen a tracer provider set. The API sets one once and for good, so
#: this only ever turns on (a plain bool, as ``_enabled``); until it does, every call asks again.
_provider_set = False
#: What reading the API's provider global gives where a later API has none.
_UNREADABLE = object()


def recording() -> bool:
    """Whether a tracer provider is set (an SDK, or the one the environment names), so a span can
    record anything: until then the API's proxy tracer makes spans that record nothing, and one
    without a valid parent is the invalid span, which carries no context either.

    Until one is set, the API's ``get_tracer_provider()`` looks ``OTEL_PYTHON_TRACER_PROVIDER`` up
    in ``os.environ`` on every call (a ``KeyError`` raised and caught: over 2 us, the larger part
    of what tracing costs an untraced request), so the module global it would return is read
    instead: the one the environment names was set by ``_load``'s ``get_tracer``, which asked for
    it. Should a later API drop that global, the public call answers, as before."""
    global _provider_set
    if not _provider_set:
        _provider_set = (_load() and getattr(trace, "_TRACER_PROVIDER", _UNREADABLE) is not None
                         and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider))
    return _provider_set


def span_name(method: str, params: Mapping[str, Any] | None, prefix: str = "") -> str:
    """``{prefix}{method}``, then `` {name}`` when the params name a target (a tool, a prompt)."""
    target = params.get("name") if params else None
    return f"{prefix}{method} {target}" if isinstance(target, str) else f"{prefix}{method}"


def mark_error(span: Any, code: int, message: str) -> None:
    """Mark ``span`` failed by a JSON-RPC error, as the official SDK does on both sides."""
    span.set_attributes({"error.type": str(code), "rpc.response.status_code": str(code)})
    span.set_status(StatusCode.ERROR, message)


@dataclass
class Outgoing:
    """One request about to be sent: its params, carrying the span's trace context, and its span."""

    params: dict[str, Any]
    span: Any = None

    def answered(self, answer: Mapping[str, Any]) -> None:
        """Record the peer's answer: an error answer marks the span failed."""
        error = answer.get("error")
        if self.span is not None and isinstance(error, Mapping):
            code = error.get("code")
            mark_error(self.span, code if isinstance(code, int) else 0, str(error.get("message", "")))


@contextmanager
def sending(method: str, params: dict[str, Any], request_id: Any, current: bool = True) -> Iterator[Outgoing]:
    """A ``CLIENT`` span around one outgoing request; the params it yields carry the span's context
    in ``_meta`` (the given dict is left untouched). An exception raised inside (a timeout, a lost
    connection) is recorded on the span. ``current=False`` for a request that stays open while the
    caller goes on (``subscriptions/listen``): the caller's later spans must not become its children."""
    if not (_enabled and _load()) or _inert():
        yield Outgoing(params)
        return
    attributes = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
    name = span_name(method, params, "MCP send ")
    if current:
        with _tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
            yield _carrying(params, span)
        return
    span = _tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
    try:
        yield _carrying(params, span, trace.set_span_in_context(span))
    except Exception as exc:
        span.record_exception(exc)
        span.set_status(StatusCode.ERROR, str(exc))
        raise
    finally:
        span.end()


def _inert() -> bool:
    """Whether a span made now would be the API's invalid one (no provider set, no span current):
    it records nothing and ``_carrying`` would inject nothing, so making it changes nothing."""
    return not recording() and not trace.get_current_span().get_span_context().is_valid


def _carrying(params: dict[str, Any], span: Any, context: Any = None) -> Outgoing:
    meta = dict(params.get("_meta") or {})
    propagate.inject(meta, context=context)
    return Outgoing({**params, "_meta": meta} if meta else params, span)


#: The global propagator whose ``fields`` were read last, and those fields (every key its
#: ``extract`` may read). Replaced whole, so a reader never sees one without the other.
_propagated: tuple[Any, frozenset[str]] = (None, frozenset())


def parent_context(meta: Mapping[str, Any] | None) -> Any:
    """The trace context a request's ``_meta`` carries, or ``None`` (parent on the ambient span)
    when it carries none or a malformed one: a client's junk must not orphan or break a span.
    A ``_meta`` holding none of the propagator's fields (nearly every request's) is not extracted:
    the result would be the ambient context, which ``None`` already stands for."""
    global _propagated
    if not (isinstance(meta, dict) or isinstance(meta, Mapping)) or not meta or not _load():
        return None
    textmap = propagate.get_global_textmap()
    if _propagated[0] is not textmap:
        _propagated = (textmap, frozenset(textmap.fields))
    if _propagated[1].isdisjoint(meta):
        return None
    try:
        context = propagate.extract(meta)
    except (ValueError, TypeError, AttributeError):
        return None
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


#: ``received_parent``'s answer when a received message gets no span.
NO_SPAN: Final = object()


def received_parent(meta: Mapping[str, Any] | None) -> Any:
    """The parent of a received message's span (``parent_context`` of its ``_meta``), or ``NO_SPAN``
    when none is worth making: tracing is off, or no provider would record it and no parent came
    (the span would be the API's invalid one, which records nothing and hands no context on, and
    making it costs a tenth of an echo). One question, asked once per message."""
    if not _enabled:
        return NO_SPAN
    parent = parent_context(meta)
    return NO_SPAN if parent is None and not recording() else parent


@contextmanager
def receiving(name: str, attributes: dict[str, Any], parent: Any) -> Iterator[Any]:
    """A ``SERVER`` span around one received message, parented on ``parent`` (``parent_context`` of
    its ``_meta``). The caller records failures itself (they are answers, not crashes of the span)."""
    _load()
    with _tracer.start_as_current_span(name, kind=SpanKind.SERVER, attributes=attributes,
                                         context=parent, record_exception=False,
                                         set_status_on_exception=False) as span:
        yield span


def failed(span: Any, exc: BaseException) -> None:
    """Mark ``span`` failed by an exception that is not a protocol error (a crash)."""
    span.set_attribute("error.type", type(exc).__qualname__)
    span.record_exception(exc)
    span.set_status(StatusCode.ERROR, str(exc))


def tool_failed(span: Any) -> None:
    """Mark ``span`` failed by a tool result that reports an error (``isError``)."""
    span.set_attribute("error.type", "tool_error")
    span.set_status(StatusCode.ERROR)


__all__ = ["NO_SPAN", "TRACER_NAME", "Outgoing", "available", "parent_context", "received_parent", "receiving", "recording", "sending", "set_tracing", "span_name", "tracing"]
