"""JSON-RPC 2.0 envelopes and error codes, at the official import path ``mcp.types.jsonrpc``.

minimcp moves messages as plain dicts (:mod:`minimcp.jsonrpc` builds and checks them); these models
are for code that wants the envelopes typed, such as ported programs that build or inspect them.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, Union

from pydantic import BaseModel, ConfigDict, TypeAdapter

from minimcp.types.base import JSONRPC_VERSION, RequestId
from minimcp.types.errors import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    ErrorData,
)


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION


class JSONRPCRequest(_Envelope):
    id: RequestId
    method: str
    params: dict[str, Any] | None = None


class JSONRPCNotification(_Envelope):
    method: str
    params: dict[str, Any] | None = None


class JSONRPCResponse(_Envelope):
    id: RequestId
    result: dict[str, Any]


class JSONRPCError(_Envelope):
    id: RequestId | None = None
    error: ErrorData


JSONRPCMessage: TypeAlias = Union[JSONRPCRequest, JSONRPCNotification, JSONRPCResponse, JSONRPCError]
jsonrpc_message_adapter: TypeAdapter[JSONRPCMessage] = TypeAdapter(JSONRPCMessage)

__all__ = [
    "CONNECTION_CLOSED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_VERSION",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "ErrorData",
    "JSONRPCError",
    "JSONRPCMessage",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "RequestId",
    "jsonrpc_message_adapter",
]
