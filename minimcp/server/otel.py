"""``OpenTelemetryMiddleware``: a ``SERVER`` span around every message a server receives.

The public path; the code lives in ``minimcp.server.core.otel``."""

from minimcp.server.core.otel import (
    default_middleware,
    OpenTelemetryMiddleware,
)

__all__ = ["default_middleware", "OpenTelemetryMiddleware"]
