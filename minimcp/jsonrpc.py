"""JSON-RPC 2.0 as MCP uses it: envelopes, parsing, and the one exception that crosses the wire.

Messages travel through minimcp as plain ``dict`` objects; pydantic models are applied to the
``params`` and ``result`` parts where a handler needs them. Keeping the envelope a dict makes the
hot path (parse, route, answer) cheap and lets unknown fields pass through untouched.

This module knows nothing about transports: it turns bytes into one message (or a precise error)
and messages back into the compact single-line JSON every MCP transport frames.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from minimcp.types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    URL_ELICITATION_REQUIRED,
    ErrorData,
    RequestId,
)

Message = dict[str, Any]
Kind = Literal["request", "notification", "response", "error"]

#: The deepest JSON nesting a message may have; deeper bodies are refused before they reach
#: pydantic, so a hostile client cannot make the parser recurse without bound.
MAX_JSON_DEPTH = 64


class MCPError(Exception):
    """A JSON-RPC error, raised on the side that learns of it and sent verbatim on the wire.

    Raised inside a handler, it fails the whole request with exactly this code, message and data;
    raised by a client method, it carries what the server answered.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def error(self) -> ErrorData:
        return ErrorData(code=self.code, message=self.message, data=self.data)

    @classmethod
    def from_error_data(cls, error: ErrorData) -> MCPError:
        return cls(error.code, error.message, error.data)

    def to_wire(self) -> dict[str, Any]:
        return error_object(self.code, self.message, self.data)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"MCPError(code={self.code}, message={self.message!r})"


class EnvelopeError(MCPError):
    """A request refused before any handler ran; ``status`` is the HTTP status Streamable HTTP gives it."""

    def __init__(self, status: int, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.status = status


class NoBackChannelError(MCPError):
    """A server-to-client request was attempted where no channel can carry it."""

    def __init__(self, method: str) -> None:
        super().__init__(
            INVALID_REQUEST,
            f"Cannot send '{method}': this transport context has no back-channel for "
            "server-initiated requests.",
        )
        self.method = method


class UrlElicitationRequiredError(MCPError):
    """Fails a legacy request until the user completes the listed URL elicitations (-32042)."""

    def __init__(self, elicitations: list[Any], message: str | None = None) -> None:
        if message is None:
            message = "URL elicitations required" if len(elicitations) > 1 else "URL elicitation required"
        wire = [e.model_dump(by_alias=True, exclude_none=True, mode="json") if hasattr(e, "model_dump") else e
                for e in elicitations]
        super().__init__(URL_ELICITATION_REQUIRED, message, {"elicitations": wire})
        self.elicitations = elicitations


def connection_closed() -> MCPError:
    return MCPError(CONNECTION_CLOSED, "Connection closed")


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error


def request(id: RequestId, method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result(id: RequestId | None, result: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error(id: RequestId | None, code: int, message: str, data: Any = None) -> Message:
    return {"jsonrpc": "2.0", "id": id, "error": error_object(code, message, data)}


def error_from(id: RequestId | None, exc: MCPError) -> Message:
    return {"jsonrpc": "2.0", "id": id, "error": exc.to_wire()}


def encode(message: Message) -> bytes:
    """One message as compact UTF-8 JSON on a single line, as SSE and stdio framing need."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def _depth_ok(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return True


def _shallow(data: bytes | str) -> bool:
    """Fewer opening brackets than the depth limit means the limit cannot be exceeded: skip the walk."""
    if isinstance(data, str):
        return data.count("{") + data.count("[") <= MAX_JSON_DEPTH
    return data.count(b"{") + data.count(b"[") <= MAX_JSON_DEPTH


def decode(data: bytes | str) -> Any:
    """Parse a body into JSON, or raise the -32700 error a peer should receive."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise MCPError(PARSE_ERROR, "Parse error: the body is not valid JSON") from None
    if isinstance(value, (dict, list)) and not _shallow(data) and not _depth_ok(value, MAX_JSON_DEPTH):
        raise MCPError(PARSE_ERROR, f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def kind_of(message: Any) -> Kind:
    """Classify one decoded JSON value, or raise the -32600 error describing what is wrong."""
    if isinstance(message, list):
        raise MCPError(INVALID_REQUEST, "Invalid Request: batches are not supported; send one message per request")
    if not isinstance(message, dict):
        raise MCPError(INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be an object")
    if message.get("jsonrpc") != "2.0":
        raise MCPError(INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"")
    has_id = "id" in message
    if has_id and not _valid_id(message["id"]):
        raise MCPError(INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer")
    if "method" in message:
        if not isinstance(message["method"], str):
            raise MCPError(INVALID_REQUEST, "Invalid Request: 'method' must be a string")
        if "params" in message and not isinstance(message["params"], dict):
            raise MCPError(INVALID_REQUEST, "Invalid Request: 'params' must be an object")
        return "request" if has_id else "notification"
    if has_id and "result" in message:
        return "response"
    if has_id and isinstance(message.get("error"), dict):
        return "error"
    raise MCPError(INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response")


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_id_in(params: Any, key: str = "requestId") -> RequestId | None:
    """``params[key]`` when it is a usable request id, else ``None``: ids named inside params (as in
    ``notifications/cancelled``) are client-controlled and may be anything, even unhashable."""
    value = params.get(key) if isinstance(params, dict) else None
    return value if _valid_id(value) else None


def safe_id(message: Any) -> RequestId | None:
    """The id to echo in an error about ``message``: its own when readable, else ``None``."""
    if isinstance(message, dict) and _valid_id(message.get("id")):
        return message["id"]
    return None


def internal_error(text: str = "Internal error") -> MCPError:
    return MCPError(INTERNAL_ERROR, text)
