"""The JSON-RPC error codes MCP uses, the error object, and the data of the protocol's own errors.

:mod:`minimcp.jsonrpc` raises and answers with these; they live here, with the other wire models,
so that the models never need the JSON-RPC layer.
"""

from __future__ import annotations

from typing import Any

from minimcp.types.base import MCPModel
from minimcp.types.capabilities import ClientCapabilities
from minimcp.types.elicitation import ElicitRequestURLParams

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
URL_ELICITATION_REQUIRED = -32042


class ErrorData(MCPModel):
    code: int
    message: str
    data: Any = None


class UnsupportedProtocolVersionErrorData(MCPModel):
    supported: list[str]
    requested: str


class MissingRequiredClientCapabilityErrorData(MCPModel):
    required_capabilities: ClientCapabilities


class ElicitationRequiredErrorData(MCPModel):
    elicitations: list[ElicitRequestURLParams]
