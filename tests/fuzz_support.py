"""Shared pieces of the fuzz suites: the server under test, value strategies and the answer oracle.

The oracle is the one rule every generated case must satisfy: an answer is a JSON-RPC error with a
spec code (or a result), it echoes the request id when the id was readable, and it never carries
Python exception text or a traceback.
"""

from __future__ import annotations

import base64
import random
import re
from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

#: Codes a fuzzed request may legitimately get: the JSON-RPC standard ones, the spec's -32020..-32022,
#: the legacy implementation ones the SDK uses (-32000 connection closed, -32001 timed out, -32002
#: resource not found on legacy) and 0 (a legacy tool's exception, as the official SDK answers).
ALLOWED_CODES = {-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022, -32000, -32001, -32002, 0}
#: Fragments that only appear when exception text or a traceback escapes to the client.
LEAKS = ("Traceback", 'File "', "object has no attribute", "unhashable", "NoneType", "KeyError",
         "TypeError", "AttributeError", "RecursionError")

METHODS = ["initialize", "ping", "server/discover", "tools/list", "tools/call", "resources/list",
           "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
           "prompts/list", "prompts/get", "completion/complete", "logging/setLevel", "notifications/initialized",
           "notifications/cancelled", "subscriptions/listen", "no/such/method", "", "tools/call\n"]
TOOLS = ["echo", "add", "ask", "boom", "nope"]


class Ok(BaseModel):
    ok: bool


def fuzz_server(**options: Any) -> MCPServer:
    """Tools that echo, add, elicit and crash; a resource and template that work and crash; prompts."""
    options.setdefault("max_workers", 4)
    options.setdefault("worker_wait_timeout", 5.0)
    mcp = MCPServer("Fuzz", **options)

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool()
    def ask(ctx: Context) -> str:
        return ctx.elicit("Sure?", schema=Ok).action

    @mcp.tool()
    def boom() -> str:
        raise RuntimeError("secret internal detail /etc/shadow")

    @mcp.resource("res://static")
    def static() -> str:
        return "static"

    @mcp.resource("res://crash")
    def crash() -> str:
        raise RuntimeError("secret internal detail /etc/shadow")

    @mcp.resource("res://item/{key}")
    def item(key: str) -> str:
        return f"item {key}"

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"hello {name}"

    @mcp.prompt()
    def broken() -> str:
        raise RuntimeError("secret internal detail /etc/shadow")

    return mcp


# --- strategies -----------------------------------------------------------------------------------
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)
ids = st.one_of(st.integers(-2**63, 2**63), st.text(max_size=12), st.none(), st.floats(allow_nan=False),
                st.booleans(), st.dictionaries(st.text(max_size=3), scalars, max_size=2), st.lists(scalars, max_size=2))
capabilities = st.one_of(st.just({}), st.just({"elicitation": {}}), st.just({"elicitation": {"form": {}}}),
                         st.just({"sampling": {}}), json_values)


@st.composite
def meta(draw: Any) -> Any:
    """A ``_meta`` that is mostly right, sometimes missing a key, mistyped, or not an object."""
    shape = draw(st.sampled_from(["good", "good", "no-version", "no-caps", "bad-version", "garbage", "legacy"]))
    if shape == "garbage":
        return draw(json_values)
    if shape == "legacy":
        return {"progressToken": draw(json_values)}
    value: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                             "io.modelcontextprotocol/clientCapabilities": draw(capabilities)}
    if shape == "no-version":
        del value["io.modelcontextprotocol/protocolVersion"]
    elif shape == "no-caps":
        del value["io.modelcontextprotocol/clientCapabilities"]
    elif shape == "bad-version":
        value["io.modelcontextprotocol/protocolVersion"] = draw(st.one_of(st.sampled_from([LEGACY, "v999", ""]),
                                                                          json_values))
    if draw(st.booleans()):
        value["io.modelcontextprotocol/logLevel"] = draw(st.one_of(st.sampled_from(["debug", "LOUD"]), json_values))
    if draw(st.booleans()):
        value["progressToken"] = draw(json_values)
    return value


@st.composite
def params(draw: Any, method: str) -> Any:
    """Parameters shaped for ``method`` most of the time, with wrong types and random extras."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    value: dict[str, Any] = {}
    if method == "tools/call":
        value["name"] = draw(st.one_of(st.sampled_from(TOOLS), json_values))
        value["arguments"] = draw(st.one_of(
            st.fixed_dictionaries({"text": st.one_of(st.text(max_size=30), json_values)}),
            st.fixed_dictionaries({"a": json_values, "b": st.integers()}), json_values))
    elif method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        value["uri"] = draw(st.one_of(st.sampled_from(["res://static", "res://crash", "res://item/x", "res://no",
                                                       "file:///etc/passwd", "res://item/../../x"]), json_values))
    elif method == "prompts/get":
        value["name"] = draw(st.one_of(st.sampled_from(["greet", "broken", "nope"]), json_values))
        value["arguments"] = draw(st.one_of(st.fixed_dictionaries({"name": st.text(max_size=10)}), json_values))
    elif method == "initialize":
        value.update(protocolVersion=draw(st.one_of(st.sampled_from([LEGACY, "2024-11-05", "1999"]), json_values)),
                     capabilities=draw(capabilities),
                     clientInfo=draw(st.one_of(st.just({"name": "f", "version": "1"}), json_values)))
    elif method in ("tools/list", "resources/list", "prompts/list", "resources/templates/list"):
        if draw(st.booleans()):
            value["cursor"] = draw(st.one_of(st.text(max_size=12), json_values,
                                             st.just(base64.urlsafe_b64encode(b"99999999999").decode())))
    elif method == "notifications/cancelled":
        value["requestId"] = draw(json_values)
    elif method == "logging/setLevel":
        value["level"] = draw(st.one_of(st.sampled_from(["debug", "nope"]), json_values))
    elif method == "completion/complete":
        value["ref"] = draw(json_values)
        value["argument"] = draw(json_values)
    if method in ("tools/call", "resources/read", "prompts/get") and draw(st.integers(0, 3)) == 0:
        value["inputResponses"] = draw(input_responses())
        value["requestState"] = draw(st.one_of(st.text(max_size=40), json_values))
    if draw(st.integers(0, 2)) > 0:
        value["_meta"] = draw(meta())
    return value


def input_responses() -> Any:
    """``inputResponses`` of every wrong shape, and a few right ones."""
    answer = st.one_of(st.just({"action": "accept", "content": {"ok": True}}), st.just({"action": "decline"}),
                       st.just({"action": "maybe"}), json_values)
    return st.one_of(st.none(), json_values, st.dictionaries(st.sampled_from(["elicit:0", "elicit:1", "x"]), answer,
                                                             max_size=3))


@st.composite
def messages(draw: Any) -> Any:
    """A JSON value posing as a JSON-RPC message: mostly near-valid envelopes, sometimes anything."""
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(json_values)
    if shape == 1:
        return draw(st.lists(st.builds(dict, jsonrpc=st.just("2.0"), id=st.integers(), method=st.sampled_from(METHODS)),
                             max_size=3))
    method = draw(st.sampled_from(METHODS))
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2.0]))}
    if shape == 2:
        message.update(id=draw(ids), result=draw(json_values))
        return message
    if shape == 3:
        message.update(id=draw(ids), error=draw(st.one_of(json_values, st.fixed_dictionaries(
            {"code": json_values, "message": json_values}))))
        return message
    message["method"] = method if draw(st.integers(0, 9)) else draw(json_values)
    if not method.startswith("notifications/") or draw(st.booleans()):
        message["id"] = draw(ids) if draw(st.integers(0, 3)) == 0 else draw(st.integers(1, 10**6))
    if draw(st.integers(0, 9)):
        message["params"] = draw(params(method))
    return message


def headers_for(message: Any) -> st.SearchStrategy[dict[str, str]]:
    """HTTP headers a modern or legacy client would send for ``message``, often wrong or missing."""
    method = message.get("method") if isinstance(message, dict) else None
    name = None
    if isinstance(message, dict) and isinstance(message.get("params"), dict):
        name = message["params"].get("name", message["params"].get("uri"))
    header_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=16)
    return st.fixed_dictionaries({}, optional={
        "MCP-Protocol-Version": st.one_of(st.sampled_from([MODERN, LEGACY, f" {MODERN} ", "v999", ""]), header_text),
        "Mcp-Method": st.one_of(st.just(str(method)), header_text),
        "Mcp-Name": st.one_of(st.just(str(name)), header_text,
                              st.just("=?base64?" + base64.b64encode(str(name).encode()).decode() + "?="),
                              st.just("=?base64?!!!?=")),
    })


def mangle(state: str, rng: random.Random) -> str:
    """A ``requestState`` truncated, bit-flipped, extended, or with a chunk of another swapped in."""
    how = rng.randrange(5)
    if how == 0:
        return state[: rng.randrange(len(state))]
    if how == 1:
        i = rng.randrange(len(state))
        return state[:i] + chr(ord(state[i]) ^ (1 << rng.randrange(6))) + state[i + 1:]
    if how == 2:
        return state + rng.choice(["A", "==", ".x", "\x00"])
    if how == 3:
        raw = bytearray(base64.urlsafe_b64decode(state[3:] + "=" * (-len(state[3:]) % 4)))
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        return state[:3] + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return "".join(rng.sample(state, len(state)))


# --- the oracle -------------------------------------------------------------------------------------
def readable_id(message: Any) -> Any:
    if isinstance(message, dict):
        value = message.get("id")
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
    return None


def check_answer(message: Any, answer: Any) -> None:
    """``answer`` is a well-formed JSON-RPC response to ``message`` that leaks nothing."""
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), answer
    assert answer.get("id") == readable_id(message), (message, answer)
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error.get("code"), int) and not isinstance(error["code"], bool), answer
        assert error["code"] in ALLOWED_CODES, answer
        assert isinstance(error.get("message"), str), answer
    assert_no_leak(answer)


def assert_no_leak(answer: Any) -> None:
    # pydantic names the type it was given (``input_type=NoneType``) when arguments fail validation,
    # a message the client is meant to read (the official SDK sends the same); that is no leak.
    text = re.sub(r"input_type=\w+", "input_type=", repr(answer))
    assert "secret internal detail" not in text or _by_design(answer), answer
    for fragment in LEAKS:
        assert fragment not in text, (fragment, answer)


def _by_design(answer: Any) -> bool:
    """A tool's own exception text in an ``isError`` result (both eras, it is for the model), and a
    legacy handler's exception as error code 0 (what the official SDK answers on 2025-11-25)."""
    result = answer.get("result") if isinstance(answer, dict) else None
    error = answer.get("error") if isinstance(answer, dict) else None
    return (isinstance(result, dict) and result.get("isError") is True) or (
        isinstance(error, dict) and error.get("code") == 0)
