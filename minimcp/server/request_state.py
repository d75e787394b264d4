"""Sealed ``requestState`` under the official import path: the policy, the codec and the boundary.

The public path; the code lives in ``minimcp.server.core.sealing`` and ``minimcp.server.core.boundary``."""

from minimcp.server.core.boundary import RequestStateBoundary
from minimcp.server.core.sealing import (
    HMACRequestStateCodec,
    InvalidRequestState,
    RequestStateCodec,
    RequestStateSecurity,
)

__all__ = ["HMACRequestStateCodec", "InvalidRequestState", "RequestStateBoundary", "RequestStateCodec",
           "RequestStateSecurity"]
