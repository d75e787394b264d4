"""Property-based fuzzing of the WSGI app through a real loopback HTTP server.

Every case is one HTTP request on a fresh connection (the development server closes each one), so
this suite carries the HTTP-only surface: methods, Content-Type/Accept, Host/Origin, session ids
(forged, stale, missing), version headers, oversize and deeply nested bodies. The message-level
volume lives in ``test_fuzz_core.py``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest
import requests
from conftest import BASE_HEADERS, LegacySession, busy_threads, legacy_handshake, modern_rpc, read_messages
from fuzz_support import LEAKS, assert_no_leak, check_answer, fuzz_server, headers_for, messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)
BODY_LIMIT = 64 * 1024
header_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


class Target:
    """The server under test and one live legacy session whose id the fuzzer reuses and forges."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session: LegacySession = legacy_handshake(url, capabilities={"elicitation": {}})
        self.baseline = busy_threads()


@pytest.fixture
def target(serve_http: Callable[..., str]) -> Iterator[Target]:
    """The server, checked after the whole test (every generated case) still serves and holds no thread."""
    mcp = fuzz_server(back_channel_timeout=0.2)
    url = serve_http(mcp, max_request_body_size=BODY_LIMIT, keepalive_interval=0.1)
    target = Target(url)
    yield target
    answer = modern_rpc(target.url, "tools/call", {"name": "echo", "arguments": {"text": "alive"}})
    assert answer["result"]["content"][0]["text"] == "alive"
    assert target.session.call_tool("echo", {"text": "legacy alive"})["content"][0]["text"] == "legacy alive"
    deadline = time.monotonic() + 5
    allowance = target.baseline + mcp.pool.max_workers
    while busy_threads() > allowance and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy_threads() <= allowance, threading.enumerate()


@st.composite
def bodies(draw: Any) -> tuple[Any, bytes]:
    """(the message if the body is JSON, the raw body): near-valid JSON-RPC, garbage, huge, deep."""
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return None, draw(st.binary(max_size=64))
    if shape == 1:
        raw = json.dumps(draw(messages())).encode()
        return None, raw[: draw(st.integers(0, max(0, len(raw) - 1)))]  # truncated
    if shape == 2:
        depth = draw(st.integers(60, 3000))
        return None, b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + b"[" * depth + b"]" * depth + b"}}"
    if shape == 3:
        size = draw(st.sampled_from([BODY_LIMIT - 200, BODY_LIMIT + 1, 4 * BODY_LIMIT]))
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "x" * size}}}
        return message, json.dumps(message).encode()
    message = draw(messages())
    return message, json.dumps(message).encode()


@st.composite
def http_requests(draw: Any, target: Target) -> tuple[str, dict[str, bytes], Any, bytes]:
    method = draw(st.sampled_from(["POST"] * 12 + ["GET", "DELETE", "PUT"]))
    message, body = draw(bodies())
    headers = dict(BASE_HEADERS)
    headers.update(draw(headers_for(message)))
    session = draw(st.sampled_from(["live", "live", "none", "forged", "flipped", "junk"]))
    if session == "live":
        headers["Mcp-Session-Id"] = target.session.session_id
    elif session == "forged":
        headers["Mcp-Session-Id"] = draw(st.sampled_from(["0" * 32, "", " ", "a" * 5000]))
    elif session == "flipped":
        sid = target.session.session_id
        headers["Mcp-Session-Id"] = sid[:-1] + ("0" if sid[-1] != "0" else "1")
    elif session == "junk":
        headers["Mcp-Session-Id"] = draw(header_text)
    if "MCP-Protocol-Version" not in headers and session == "live":
        headers["MCP-Protocol-Version"] = target.session.protocol_version
    if draw(st.integers(0, 5)) == 0:
        headers["Content-Type"] = draw(st.sampled_from(["text/plain", "application/json; charset=latin-1", "",
                                                        "application/x-www-form-urlencoded"]))
    if draw(st.integers(0, 5)) == 0:
        headers["Accept"] = draw(st.sampled_from(["application/json", "text/event-stream", "*/*", "", "x/y"]))
    if draw(st.integers(0, 7)) == 0:
        headers["Host"] = draw(st.sampled_from(["evil.example.com", "localhost.evil.com", "127.0.0.1:notaport",
                                                "[::1]:80", "LOCALHOST:1", ""]))
    if draw(st.integers(0, 7)) == 0:
        headers["Origin"] = draw(st.sampled_from(["null", "http://evil.example.com", "http://localhost:1",
                                                  "file://", "http://127.0.0.1.evil.com"]))
    # What ``requests`` can put on the wire: no leading white space, no line breaks.
    headers = {k: v.replace("\r", "").replace("\n", "").lstrip().encode() for k, v in headers.items()}
    return method, headers, message, body


def check_response(response: requests.Response, message: Any) -> None:
    """Never 5xx, never a traceback; a JSON-RPC body, when there is one, is a conformant answer."""
    assert response.status_code < 500, (response.status_code, response.text[:300])
    for fragment in LEAKS:
        assert fragment not in response.text, (fragment, response.text[:300])
    content_type = response.headers.get("Content-Type", "")
    if not (content_type.startswith("application/json") or content_type.startswith("text/event-stream")):
        return
    answers = [m for m in read_messages(response) if "result" in m or "error" in m]
    if response.status_code in (200,) and isinstance(message, dict) and "method" in message and "id" in message:
        if answers:
            check_answer(message, answers[-1])
    for answer in answers:
        assert_no_leak(answer)
        if "error" in answer:
            assert isinstance(answer["error"].get("code"), int), answer
    if response.status_code >= 400 and content_type.startswith("application/json") and response.content:
        assert answers and "error" in answers[0], response.text[:300]


@settings(FUZZ, max_examples=1800)
@given(data=st.data())
def test_any_http_request_gets_a_conformant_answer(target: Target, data: st.DataObject) -> None:
    method, headers, message, body = data.draw(http_requests(target))
    with requests.request(method, target.url, data=body, headers=headers, timeout=10, stream=True) as response:
        if method == "GET" and response.status_code == 200:
            # The standalone stream stays open by design: it must at least open cleanly.
            assert next(response.iter_content(64)).startswith(b":"), response.headers
            return
        check_response(response, message)
    if method == "DELETE" and response.status_code == 200:
        target.session = legacy_handshake(target.url, capabilities={"elicitation": {}})


def test_a_burst_of_hostile_bodies_on_a_live_session(target: Target) -> None:
    hostile = [b"{", b"[]", b'{"jsonrpc":"2.0","id":{},"method":"x"}', b"[" * 5000 + b"]" * 5000,
               b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[]}}',
               b'{"jsonrpc":"2.0","id":1.5,"result":{}}', b'{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}']
    for body in hostile * 10:
        response = requests.post(target.url, data=body, timeout=10, headers={
            **BASE_HEADERS, "Mcp-Session-Id": target.session.session_id,
            "MCP-Protocol-Version": target.session.protocol_version})
        check_response(response, None)
        assert response.status_code in (202, 400), (body, response.status_code, response.text)
