"""Built-in server middleware: timing, structured logging and a per-principal rate limit.

The public path; the code lives in ``minimcp.server.app.middleware``."""

from minimcp.server.app.middleware import (
    LoggingMiddleware,
    RateLimitMiddleware,
    TimingMiddleware,
)

__all__ = ["LoggingMiddleware", "RateLimitMiddleware", "TimingMiddleware"]
