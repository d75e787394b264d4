"""Property-based fuzzing of the sans-I/O core: bytes in, a spec-conformant answer out, nothing stuck.

No sockets: ``jsonrpc.decode``/``kind_of`` take raw bytes, the in-memory endpoint takes whole
messages the way stdio does, and ``modern_exchange`` replays what the WSGI app does with a
2026-07-28 POST (headers included) straight against the ``Dispatcher``. Most of the suite's
generated volume lives here because a case costs microseconds, not a TCP connection.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from conftest import busy_threads
from fuzz_support import (
    MODERN,
    check_answer,
    fuzz_server,
    headers_for,
    json_values,
    mangle,
    messages,
    readable_id,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError
from minimcp.server import MCPServer
from minimcp.server.lowlevel.outbox import QueueOutbox
from minimcp.server.edges.http.errors import http_status
from minimcp.shared.transport_context import TransportContext

#: No example database: the suite runs fresh cases each time and leaves no files in the tree.
FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)
CAPS = {"elicitation": {}}
#: One in-memory connection per server, reused across examples (a handshake per case costs too much).
PEERS: dict[int, Any] = {}


def modern_params(params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                "io.modelcontextprotocol/clientCapabilities": capabilities or {}}}


def drain(outbox: QueueOutbox, seconds: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        item = outbox.get(0.5)
        if item is not None and item[1]:
            return item[0]
    raise AssertionError("no answer within the bound")


def modern_exchange(mcp: MCPServer, message: Any, headers: Mapping[str, str] | None) -> tuple[int, dict[str, Any] | None]:
    """What ``MCPWSGIApp`` does with one decoded POST body classified 2026-07-28: (status, answer)."""
    dispatcher = mcp.dispatcher
    try:
        kind = jsonrpc.kind_of(message)
        session = dispatcher.modern_connection(message, headers)
        if kind == "notification":
            return 202, None
        if kind != "request":
            return 400, jsonrpc.error(readable_id(message), -32600, "A 2026-07-28 client sends no responses")
        outbox = QueueOutbox(can_request=False)
        answer = dispatcher.handle_request(message, session, outbox,
                                           TransportContext(kind="streamable-http", can_send_request=False))
    except MCPError as refused:  # the core refused the envelope; the HTTP edge's table gives the status
        return http_status(refused.code), jsonrpc.error_from(jsonrpc.safe_id(message), refused)
    return 200, answer if answer is not None else drain(outbox)


class Caseless(dict[str, str]):
    """Request headers as the dispatcher reads them: any spelling of a name finds its value."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__({k.lower(): v for k, v in headers.items()})

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)


class Peer:
    """One in-memory connection that answers every elicitation: first with fuzz, then correctly."""

    def __init__(self, mcp: MCPServer) -> None:
        self.endpoint = mcp.in_memory_endpoint()
        self.garbage: Any = None
        self.handshake()

    def on_message(self, message: dict[str, Any]) -> None:
        if message.get("method") == "elicitation/create":
            if self.garbage is not None:
                self.deliver({"jsonrpc": "2.0", "id": message["id"], **self.garbage})
            self.deliver({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept",
                                                                            "content": {"ok": True}}})

    def deliver(self, message: Any) -> Any:
        try:
            return self.endpoint.exchange(message, self.on_message, timeout=10)
        except MCPError as bad:
            assert bad.code in (-32700, -32600), bad
            return None

    def handshake(self) -> None:
        answer = self.deliver(jsonrpc.request(0, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": CAPS, "clientInfo": {"name": "fuzz", "version": "1"}}))
        assert "result" in answer, answer
        self.deliver(jsonrpc.notification("notifications/initialized"))


@pytest.fixture(scope="module")
def mcp() -> Iterator[MCPServer]:
    server = fuzz_server(back_channel_timeout=5.0)
    server.lifespan_context()
    baseline = busy_threads()
    yield server
    assert_healthy(server, baseline)
    server.close()


def assert_healthy(server: MCPServer, baseline: int) -> None:
    """The server still answers a normal call and holds no thread beyond its own pool's."""
    status, answer = modern_exchange(server, jsonrpc.request(1, "tools/call", modern_params(
        {"name": "echo", "arguments": {"text": "alive"}})), None)
    assert status == 200 and answer is not None and answer["result"]["content"][0]["text"] == "alive", answer
    deadline = time.monotonic() + 5
    while busy_threads() > baseline + server.pool.max_workers and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy_threads() <= baseline + server.pool.max_workers, threading.enumerate()


# --- bytes ------------------------------------------------------------------------------------------
@settings(FUZZ, max_examples=2500)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200),
                 json_values.map(lambda v: jsonrpc.encode({"v": v})[5:-1]),
                 st.integers(60, 5000).map(lambda n: b"[" * n + b"]" * n),
                 st.integers(60, 5000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n)))
def test_decode_and_kind_of_answer_or_refuse(data: bytes | str) -> None:
    try:
        value = jsonrpc.decode(data)
    except MCPError as bad:
        assert bad.code == -32700
        return
    try:
        assert jsonrpc.kind_of(value) in ("request", "notification", "response", "error")
    except MCPError as bad:
        assert bad.code == -32600


# --- whole messages, stdio-style (no headers) --------------------------------------------------------
@settings(FUZZ, max_examples=2000)
@given(message=messages(), garbage=st.one_of(st.none(), st.fixed_dictionaries({"result": json_values}),
                                             st.fixed_dictionaries({"error": json_values}),
                                             st.fixed_dictionaries({"error": st.fixed_dictionaries(
                                                 {"code": json_values, "message": json_values})})))
def test_in_memory_messages_get_conformant_answers(mcp: MCPServer, message: Any, garbage: Any) -> None:
    peer = PEERS.setdefault(id(mcp), Peer(mcp))
    peer.garbage = garbage
    answer = peer.deliver(message)
    kind = None
    try:
        kind = jsonrpc.kind_of(message)
    except MCPError:
        pass
    if kind == "request":
        check_answer(message, answer)
    else:
        assert answer is None
    if isinstance(answer, dict) and "result" in answer and message.get("method") == "initialize":
        peer.deliver(jsonrpc.notification("notifications/initialized"))
    peer.garbage = None
    echo = peer.deliver(jsonrpc.request("after", "tools/call", {"name": "echo", "arguments": {"text": "ok"}}))
    assert echo["result"]["content"][0]["text"] == "ok", echo


# --- 2026-07-28 requests with headers, as the WSGI app sees them -----------------------------------
@settings(FUZZ, max_examples=2500)
@given(data=st.data())
def test_modern_requests_with_headers(mcp: MCPServer, data: st.DataObject) -> None:
    message = data.draw(messages())
    if isinstance(message, dict) and isinstance(message.get("params"), dict) and data.draw(st.booleans()):
        message["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                                      "io.modelcontextprotocol/clientCapabilities": data.draw(
                                          st.sampled_from([{}, CAPS]))}
    headers = Caseless(data.draw(headers_for(message)))
    if not isinstance(message, dict) or mcp.dispatcher.era_of(
            message, (headers.get("MCP-Protocol-Version") or "").strip() or None) != MODERN:
        return
    status, answer = modern_exchange(mcp, message, headers)
    if answer is None:
        assert status == 202
        return
    check_answer(message, answer)
    assert status in (200, 400, 404), (status, answer)
    if status == 200 and "result" in answer:
        assert answer["result"].get("resultType") in ("complete", "input_required"), answer


# --- requestState tampering and cross-tool replay ------------------------------------------------------
@pytest.fixture(scope="module")
def states(mcp: MCPServer) -> dict[str, str]:
    found = {}
    for tool in ("ask",):
        for text in ("x", "y"):
            status, answer = modern_exchange(mcp, jsonrpc.request(1, "tools/call", modern_params(
                {"name": tool, "arguments": {"text": text}}, CAPS)), None)
            assert answer is not None and answer["result"]["resultType"] == "input_required", answer
            found[text] = answer["result"]["requestState"]
    return found


@settings(FUZZ, max_examples=1500)
@given(seed=st.integers(0, 2**32), which=st.sampled_from(["x", "y"]), tool=st.sampled_from(["ask", "echo", "add"]),
       text=st.sampled_from(["x", "y"]), responses=st.sampled_from(
           [{"elicit:0": {"action": "accept", "content": {"ok": True}}}, {}, None, {"elicit:0": {"action": "x"}}]))
def test_mangled_or_foreign_request_state_never_completes(mcp: MCPServer, states: dict[str, str], seed: int,
                                                          which: str, tool: str, text: str, responses: Any) -> None:
    state = states[which]
    rng = random.Random(seed)
    mangled = mangle(state, rng) if rng.random() < 0.8 else state
    arguments = {"text": text}
    call = {"name": tool, "arguments": arguments, "requestState": mangled}
    if responses is not None:
        call["inputResponses"] = responses
    message = jsonrpc.request(seed, "tools/call", modern_params(call, CAPS))
    status, answer = modern_exchange(mcp, message, None)
    check_answer(message, answer)
    genuine = mangled == state and tool == "ask" and text == which
    if not genuine:
        assert answer is not None and "error" in answer, (mangled, answer)
        assert answer["error"]["code"] == -32602, answer
