"""Cache hints for 2026-07-28 results, at the official import path ``mcp.server.caching``.

Cacheable results (the ``*/list`` methods, ``resources/read``, ``server/discover``: the method
table's ``cacheable`` rows, ``minimcp.types.methods``) carry ``ttlMs`` and ``cacheScope``. Unless
told otherwise they are immediately stale and private (the models' defaults);
``cache_hints={"tools/list": CacheHint(ttl_ms=60_000, scope="public")}`` on ``MCPServer`` or the
low-level ``Server`` fills them for one method, and a handler that sets a field itself keeps its
value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from minimcp.types import CacheableResult
from minimcp.types.methods import CACHEABLE_METHODS, CacheableMethod

__all__ = ["CACHEABLE_METHODS", "CacheHint", "CacheableMethod", "apply_cache_hint", "hinted", "validate_cache_hints"]

ResultT = TypeVar("ResultT", bound=CacheableResult)


@dataclass(frozen=True, slots=True)
class CacheHint:
    """How long (milliseconds; 0 is immediately stale) and how widely a result may be reused:
    ``"public"`` across users, ``"private"`` only by the one that asked."""

    ttl_ms: int = 0
    scope: Literal["public", "private"] = "private"

    def __post_init__(self) -> None:
        if self.ttl_ms < 0:
            raise ValueError(f"ttl_ms must be >= 0, got {self.ttl_ms}")
        if self.scope not in ("public", "private"):
            raise ValueError(f"scope must be 'public' or 'private', got {self.scope!r}")


def apply_cache_hint(result: ResultT, hint: CacheHint) -> ResultT:
    """``result`` with the hint in every cache field its handler left unset."""
    update: dict[str, Any] = {}
    if "ttl_ms" not in result.model_fields_set:
        update["ttl_ms"] = hint.ttl_ms
    if "cache_scope" not in result.model_fields_set:
        update["cache_scope"] = hint.scope
    return result.model_copy(update=update) if update else result


def hinted(result: Any, method: str, hints: Mapping[str, CacheHint], private: bool) -> Any:
    """``result`` with the server's hint for ``method``; under a public hint a listing that varies
    by user (``private``, the request's plan says so) stays private, so no shared cache hands one
    user's list to another."""
    hint = hints.get(method)
    if hint is None or not isinstance(result, CacheableResult):
        return result
    if hint.scope == "public" and private:
        hint = CacheHint(hint.ttl_ms, "private")
    return apply_cache_hint(result, hint)


def validate_cache_hints(cache_hints: Mapping[Any, Any] | None) -> dict[str, CacheHint]:
    """Check a ``cache_hints`` argument when the server is built, not at its first request."""
    if cache_hints is None:
        return {}
    unknown = sorted(repr(method) for method in cache_hints if method not in CACHEABLE_METHODS)
    if unknown:
        raise ValueError(
            f"cache_hints keys must be cacheable methods ({', '.join(sorted(CACHEABLE_METHODS))}); got: {', '.join(unknown)}"
        )
    for method, hint in cache_hints.items():
        if not isinstance(hint, CacheHint):
            raise TypeError(f"cache_hints[{method!r}] must be a CacheHint, got {type(hint).__name__}")
    return dict(cache_hints)

