"""Cache hints for 2026-07-28 results, at the official import path ``mcp.server.caching``.

The public path; the code lives in ``minimcp.server.core.caching``."""

from minimcp.server.core.caching import (
    apply_cache_hint,
    CACHEABLE_METHODS,
    CacheableMethod,
    CacheHint,
    hinted,
    validate_cache_hints,
)

__all__ = ["apply_cache_hint", "CACHEABLE_METHODS", "CacheableMethod", "CacheHint", "hinted", "validate_cache_hints"]
