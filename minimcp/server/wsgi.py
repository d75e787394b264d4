"""Streamable HTTP as a WSGI application: the adapter between a WSGI server and the exchange.

The public path; the code lives in ``minimcp.server.edges.wsgi``."""

from minimcp.server.edges.wsgi import (
    check_route_response,
    EnvironHeaders,
    exchange_request,
    MCPWSGIApp,
    PrincipalHook,
    read_body,
    remote_user,
    RouteResponseError,
)

__all__ = ["check_route_response", "EnvironHeaders", "exchange_request", "MCPWSGIApp", "PrincipalHook", "read_body", "remote_user", "RouteResponseError"]
