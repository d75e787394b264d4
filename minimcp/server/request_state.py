"""Sealed ``requestState`` under the official import path: the policy, the codec and the boundary."""

from minimcp.server.core.rounds import (
    HMACRequestStateCodec,
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateCodec,
    RequestStateSecurity,
)

__all__ = ["HMACRequestStateCodec", "InvalidRequestState", "RequestStateBoundary", "RequestStateCodec",
           "RequestStateSecurity"]
