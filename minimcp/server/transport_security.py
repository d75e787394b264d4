"""DNS-rebinding protection: which ``Host`` and ``Origin`` values an HTTP endpoint accepts.

The public path; the code lives in ``minimcp.server.edges.http.security``."""

from minimcp.server.edges.http.security import (
    host_allowed,
    origin_allowed,
    TransportSecuritySettings,
)

__all__ = ["host_allowed", "origin_allowed", "TransportSecuritySettings"]
