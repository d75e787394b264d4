"""``ServerRequestContext``: what a low-level handler receives with its params, as in the official SDK.

The public path; the code lives in ``minimcp.server.core.context``."""

from minimcp.server.core.context import (
    CallNext,
    HandlerResult,
    ServerMiddleware,
    ServerRequestContext,
)

__all__ = ["CallNext", "HandlerResult", "ServerMiddleware", "ServerRequestContext"]
