"""JSON-RPC 2.0 as MCP uses it: envelopes, parsing, and the one exception that crosses the wire.

Messages travel through minimcp as plain ``dict`` objects; pydantic models are applied to the
``params`` and ``result`` parts where a handler needs them. Keeping the envelope a dict makes the
hot path (parse, route, answer) cheap and lets unknown fields pass through untouched.

This is the one home of JSON-RPC in minimcp: ``minimcp.types.jsonrpc`` (typed models of these
envelopes) and ``minimcp.shared.jsonrpc_dispatcher`` (a stream loop's settings) are the official
import paths' faces, and define no wire rule of their own. The values an envelope carries (the
version, request ids, error codes and the error object) are wire models of ``minimcp.types``, which
this module builds on and which never import it. This module knows nothing about transports: it
turns bytes into one message (or a precise error) and messages back into the compact single-line
JSON every MCP transport frames.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_json

from minimcp.types.base import JSONRPC_VERSION, RequestId
from minimcp.types.elicitation import ElicitRequestURLParams
from minimcp.types.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    URL_ELICITATION_REQUIRED,
    ErrorData,
)

if TYPE_CHECKING:
    from minimcp.types.jsonrpc import JSONRPCError

Message = dict[str, Any]
Kind = Literal["request", "notification", "response", "error"]

#: The deepest JSON nesting a message may have; deeper bodies are refused before they are parsed,
#: so a hostile client cannot make a parser (json, pydantic, a handler's walk) recurse without bound.
MAX_JSON_DEPTH = 64
#: The most arrays and objects a message may hold. However shallow, each costs the parser time and
#: memory: 4 MB of ``[],`` is 1.4 million lists and about a second of CPU to parse; 100,000 take
#: about 20 ms, and are more than any MCP message that fits the default 4 MB body limit needs.
MAX_JSON_CONTAINERS = 100_000


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

    @classmethod
    def from_jsonrpc_error(cls, error: JSONRPCError) -> MCPError:
        return cls.from_error_data(error.error)

    def to_wire(self) -> dict[str, Any]:
        return error_object(self.code, self.message, self.data)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"MCPError(code={self.code}, message={self.message!r})"


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

    @classmethod
    def from_error(cls, error: ErrorData) -> UrlElicitationRequiredError:
        """The error a server answered (``-32042``), its elicitations as ``ElicitRequestURLParams``;
        ``ValueError`` for another code or elicitations that are not URL-mode requests."""
        if error.code != URL_ELICITATION_REQUIRED:
            raise ValueError(f"Expected error code {URL_ELICITATION_REQUIRED}, got {error.code}")
        listed = error.data.get("elicitations") if isinstance(error.data, dict) else None
        items = listed if isinstance(listed, list) else []
        return cls([ElicitRequestURLParams.model_validate(item) for item in items], error.message)


def connection_closed() -> MCPError:
    return MCPError(CONNECTION_CLOSED, "Connection closed")


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error


def request(id: RequestId, method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": JSONRPC_VERSION, "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": JSONRPC_VERSION, "method": method}
    if params is not None:
        message["params"] = params
    return message


def result(id: RequestId | None, result: dict[str, Any]) -> Message:
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "result": result}


def error(id: RequestId | None, code: int, message: str, data: Any = None) -> Message:
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "error": error_object(code, message, data)}


def error_from(id: RequestId | None, exc: MCPError) -> Message:
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "error": exc.to_wire()}


class InProcessError(dict[str, Any]):
    """An error response that still holds the exception it was made from, for a client in the same
    process: the official SDK's in-memory client calls 2026-07-28 handlers directly, so its caller
    catches the server's own ``UrlElicitationRequiredError`` or ``NoBackChannelError``. Encoded, it
    is the plain error response."""

    def __init__(self, id: RequestId | None, exc: MCPError) -> None:
        super().__init__(jsonrpc=JSONRPC_VERSION, id=id, error=exc.to_wire())
        self.exception = exc


def failure_of(answer: Message) -> MCPError:
    """The exception an error response stands for: the server's own when it never left the process."""
    if isinstance(answer, InProcessError):
        return answer.exception
    error = answer["error"]
    return MCPError(error.get("code", INTERNAL_ERROR), str(error.get("message", "")), error.get("data"))


def encode(message: Message) -> bytes:
    """One message as compact UTF-8 JSON on a single line, as SSE and stdio framing need.

    pydantic-core's encoder, as the official SDK's wire: a fifth of ``json``'s cost for an answer,
    the same bytes but for the shortest spelling of small floats (``1e-7``), and values ``json``
    refuses (a ``datetime``, a model inside a dict) written as pydantic writes them."""
    return to_json(message)


_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_SQUARE = bytes.maketrans(b"{}", b"[]")


def _structure(data: bytes) -> bytes:
    """The brackets of a JSON text outside its strings, ``{}`` written ``[]``.

    Only C-speed passes over the bytes, none per value: escaped backslashes and quotes go, then
    everything but quotes and brackets; two adjacent quotes (an end and a start, or an empty
    string) go without changing which brackets are inside a string; what is left between a pair of
    quotes is a string's brackets. A gap between two strings that remain holds a bracket outside
    them, so more than twice ``MAX_JSON_CONTAINERS`` of them cannot be valid within the limit, and
    are refused before the one step that costs per string.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = data.translate(_SQUARE, _NOT_STRUCTURE).replace(b'""', b"")
    quotes = kept.count(b'"')
    if not quotes:
        return kept
    if quotes // 2 - 1 > 2 * MAX_JSON_CONTAINERS:
        raise _too_many()
    return b"".join(kept.split(b'"')[::2])


def _too_many() -> MCPError:
    return MCPError(PARSE_ERROR, f"Parse error: JSON with more than {MAX_JSON_CONTAINERS} arrays and objects")


def _check_structure(data: bytes | str) -> None:
    """Refuse, before parsing, a text nested deeper than ``MAX_JSON_DEPTH`` or holding more than
    ``MAX_JSON_CONTAINERS`` arrays and objects, in time linear in its length with a small constant.

    The depth is the number of rounds of deleting innermost ``[]`` pairs that empty the structure;
    after the container check it is at most 200 KB, so ``MAX_JSON_DEPTH`` rounds stay cheap, and a
    run of opening brackets longer than the limit is caught at once. Unbalanced brackets are left
    to the parser, which says the text is not JSON.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return  # too few brackets to nest deeper, or to be many
    structure = _structure(raw)
    if b"[" * (MAX_JSON_DEPTH + 1) in structure:
        raise _too_deep()
    if len(structure) > 2 * MAX_JSON_CONTAINERS:
        raise _too_many()
    for _ in range(MAX_JSON_DEPTH):
        inner = structure.replace(b"[]", b"")
        if len(inner) == len(structure):
            return
        structure = inner
    if b"[]" in structure:
        raise _too_deep()


def _too_deep() -> MCPError:
    return MCPError(PARSE_ERROR, f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels")


#: The C scanner ``json.loads`` runs, as its default decoder's: it keeps no state between calls but
#: a key memo it empties after each, so every thread shares it, as they share that decoder. Typeshed
#: leaves out the attribute, which the decoder's ``__init__`` sets.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_JSON_WHITESPACE = " \t\n\r"


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or a ``ValueError``. A text that is one object with
    only JSON whitespace after it (every message, every sealed state) goes straight to the C
    scanner, without ``json.loads``'s Python-level steps (a third of its cost for a message);
    anything else goes through ``json.loads`` itself, which also words the error."""
    if text[:1] == "{":
        try:
            value, end = _scan_once(text, 0)
        except StopIteration:
            return json.loads(text)
        if end == len(text) or not text[end:].strip(_JSON_WHITESPACE):
            return value
    return json.loads(text)


def decode(data: bytes | str) -> Any:
    """Parse a body into JSON, or raise the -32700 error a peer should receive."""
    _check_structure(data)
    try:
        if isinstance(data, bytes) and data[:1] == b"{" and data[1:2] != b"\0":
            # What json.loads does with bytes it finds are UTF-8 (not UTF-16 or 32, no byte order
            # mark: an object's first byte, then no NUL), without its Python-level detection.
            return loads(data.decode("utf-8", "surrogatepass"))
        return json.loads(data)
    except (ValueError, RecursionError):
        raise MCPError(PARSE_ERROR, "Parse error: the body is not valid JSON") from None


def kind_of(message: Any) -> Kind:
    """Classify one decoded JSON value, or raise the -32600 error describing what is wrong."""
    if isinstance(message, list):
        raise MCPError(INVALID_REQUEST, "Invalid Request: batches are not supported; send one message per request")
    if not isinstance(message, dict):
        raise MCPError(INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be an object")
    if message.get("jsonrpc") != JSONRPC_VERSION:
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


class Unreadable(MCPError):
    """A message that cannot be handled as JSON-RPC; ``reply`` is the error response that answers it
    (echoing the message's id when that much was readable)."""

    def __init__(self, error: MCPError, message: Any) -> None:
        super().__init__(error.code, error.message, error.data)
        self.reply = error_from(safe_id(message), error)


def parse(data: bytes | str) -> tuple[Message, Kind]:
    """One incoming message and its kind: what every transport does first with the bytes it read."""
    message: Any = None
    try:
        message = decode(data)
        return message, kind_of(message)
    except MCPError as bad:
        raise Unreadable(bad, message) from None
