"""Built-in server middleware: timing, structured logging and a per-principal rate limit.

Each is a ``ServerMiddleware`` (``minimcp.server.core.context``): list it in ``MCPServer(middleware=[...])``
or append it to ``server.middleware``. They see every message in both eras and on every transport,
as any middleware does. A tool's own time limit is ``@mcp.tool(timeout=...)``, answered by the
dispatcher rather than here, because the answer must leave while the body still runs.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from minimcp.jsonrpc import MCPError
from minimcp.server.core.context import CallNext, HandlerResult, ServerRequestContext
from minimcp.server.core.shares import principal_of, principals_of
from minimcp.types import INTERNAL_ERROR, INVALID_PARAMS

__all__ = ["LoggingMiddleware", "RateLimitMiddleware", "TimingMiddleware"]


def _target(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """What a request acts on: a tool's or prompt's name, a resource's URI."""
    params = ctx.params or {}
    for key in ("name", "uri"):
        value = params.get(key)
        if isinstance(value, str):
            return value
    return None


def _error_code(exc: BaseException) -> int | None:
    """The code the client is answered with for ``exc`` (``None`` for a crash: the era decides)."""
    if isinstance(exc, MCPError):
        return exc.code
    if isinstance(exc, ValidationError):
        return INVALID_PARAMS
    return None


class TimingMiddleware:
    """Logs how long each request took (``tools/call add took 1.23 ms``), at ``level`` on ``logger``."""

    sends_nothing = True  # it writes to a Python logger, not to the client

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger or logging.getLogger("minimcp.timing")
        self.level = level

    def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            return call_next(ctx)
        start = time.perf_counter()
        try:
            return call_next(ctx)
        finally:
            elapsed = (time.perf_counter() - start) * 1000
            target = _target(ctx)
            what = f"{ctx.method} {target}" if target else ctx.method
            self.logger.log(self.level, "%s took %.2f ms", what, elapsed,
                            extra={"mcp_method": ctx.method, "mcp_target": target, "duration_ms": elapsed})


class LoggingMiddleware:
    """One structured record per message: a JSON object as the message (``{"event": "mcp.request",
    "method": ..., "target": ..., "request_id": ..., "principal": ..., "protocol_version": ...,
    "outcome": "ok" | "error" | "tool_error", "error_code": ..., "duration_ms": ...}``), and the same
    fields as the record's ``mcp`` attribute for a log formatter. Arguments and results are not
    logged: they may hold what a caller would not want in a log."""

    sends_nothing = True

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger or logging.getLogger("minimcp.requests")
        self.level = level

    def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        fields: dict[str, Any] = {
            "event": "mcp.request" if ctx.request_id is not None else "mcp.notification",
            "method": ctx.method, "target": _target(ctx),
            "request_id": ctx.request_id, "principal": principal_of(ctx.transport, ctx.session.connection),
            "protocol_version": ctx.protocol_version, "transport": ctx.transport.kind,
        }
        start = time.perf_counter()
        try:
            result = call_next(ctx)
        except Exception as exc:
            fields["outcome"], fields["error_code"] = "error", _error_code(exc)
            raise
        else:
            reports_error = isinstance(result, dict) and result.get("isError") is True
            fields["outcome"], fields["error_code"] = ("tool_error" if reports_error else "ok"), None
            return result
        finally:
            fields["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
            if self.logger.isEnabledFor(self.level):
                self.logger.log(self.level, json.dumps(fields, default=str), extra={"mcp": fields})


class RateLimitMiddleware:
    """At most ``limit`` requests per ``per`` seconds from one caller (a token bucket, so a quiet
    caller may spend ``burst`` at once). A request over it is refused at once with an error that
    names the limit; other callers are not slowed.

    A caller is the fair shares' principal (``minimcp.server.core.shares.principals_of``): a
    signed-in user is one caller across their sessions and addresses; an anonymous legacy session
    counts against both itself and the client's address, so fresh sessions do not buy fresh
    requests (and every anonymous client behind one proxy or NAT shares the address's count: give
    the server a principal hook that reads the proxy's client header); an anonymous 2026-07-28
    request counts against its address. A transport with a single client (stdio, in memory) is one
    caller. ``methods`` limits which requests count (``None``: every request; notifications never).

    ``_lock`` guards ``_buckets`` (principal -> [tokens, last refill time]). A full bucket holds no
    information, so once there are more than ``max_tracked`` the full ones are dropped: callers that
    come and go leave nothing behind.
    """

    sends_nothing = True  # a refusal is the request's answer, not a message of its own

    def __init__(self, limit: int, per: float = 1.0, *, burst: int | None = None,
                 methods: Iterable[str] | None = None, max_tracked: int = 10_000) -> None:
        if limit < 1 or not per > 0:
            raise ValueError(f"a rate limit needs limit >= 1 and per > 0, got {limit} per {per}")
        self.limit = limit
        self.per = per
        self.burst = burst if burst is not None else limit
        if self.burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.methods = frozenset(methods) if methods is not None else None
        self.max_tracked = max_tracked
        self._lock = threading.Lock()
        self._buckets: dict[str, list[float]] = {}

    def _take(self, *principals: str) -> float | None:
        """Spend one token of each of ``principals``' if each has one; ``None`` then, else the
        seconds until each has (nothing is spent when one is short)."""
        rate = self.limit / self.per
        with self._lock:
            now = time.monotonic()
            buckets = [self._bucket(principal, now, rate) for principal in principals]
            for bucket in buckets:
                bucket[0] = min(float(self.burst), bucket[0] + (now - bucket[1]) * rate)
                bucket[1] = now
            short = [bucket[0] for bucket in buckets if bucket[0] < 1]
            if short:
                return (1 - min(short)) / rate
            for bucket in buckets:
                bucket[0] -= 1
            return None

    def _bucket(self, principal: str, now: float, rate: float) -> list[float]:
        """``principal``'s bucket, a full one for a caller not tracked yet; under ``_lock``."""
        bucket = self._buckets.get(principal)
        if bucket is None:
            if len(self._buckets) >= self.max_tracked:
                self._forget_full(now, rate)
            bucket = self._buckets[principal] = [float(self.burst), now]
        return bucket

    def _forget_full(self, now: float, rate: float) -> None:
        for key in [key for key, (tokens, last) in self._buckets.items()
                    if tokens + (now - last) * rate >= self.burst]:
            del self._buckets[key]

    def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None or (self.methods is not None and ctx.method not in self.methods):
            return call_next(ctx)
        wait = self._take(*(principals_of(ctx.transport, ctx.session.connection) or ("",)))
        if wait is not None:
            raise MCPError(INTERNAL_ERROR,
                           f"Rate limit exceeded: at most {self.limit} requests per {self.per:g} seconds "
                           f"per caller; retry in {wait:.2f} seconds",
                           {"limit": self.limit, "per": self.per, "retryAfter": round(wait, 3)})
        return call_next(ctx)

