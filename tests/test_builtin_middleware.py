"""The built-in middleware (timing, structured logging, a per-principal rate limit) and
``@mcp.tool(timeout=...)``, over real loopback HTTP in both eras and over stdio."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import MODES, ROOT, legacy_handshake, wait_for

from minimcp import Client, MCPError
from minimcp.client.stdio import StdioServerParameters
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.server.middleware import LoggingMiddleware, RateLimitMiddleware, TimingMiddleware
from minimcp.types import INTERNAL_ERROR, REQUEST_TIMEOUT

WAIT = 30


def _server(*middleware: Any) -> MCPServer:
    mcp = MCPServer("mw", middleware=list(middleware))

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool()
    def fail() -> str:
        raise ValueError("no")

    return mcp


@MODES
def test_timing_logs_each_request_with_its_duration(serve_http: Callable[..., str], caplog: pytest.LogCaptureFixture,
                                                    mode: str, version: str) -> None:
    caplog.set_level(logging.INFO, logger="minimcp.timing")
    with Client(serve_http(_server(TimingMiddleware())), mode=mode) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    timed = [r for r in caplog.records if r.name == "minimcp.timing" and r.getMessage().startswith("tools/call add took")]
    assert len(timed) == 1
    assert timed[0].mcp_method == "tools/call" and timed[0].mcp_target == "add" and timed[0].duration_ms >= 0


@MODES
def test_structured_logging_writes_one_json_record_per_message(
        serve_http: Callable[..., str], caplog: pytest.LogCaptureFixture, mode: str, version: str) -> None:
    caplog.set_level(logging.INFO, logger="minimcp.requests")
    with Client(serve_http(_server(LoggingMiddleware())), mode=mode) as client:
        client.call_tool("add", {"a": 1, "b": 2})
        client.call_tool("fail", {})
        with pytest.raises(MCPError):
            client.read_resource("nowhere://x")
    records = [json.loads(r.getMessage()) for r in caplog.records if r.name == "minimcp.requests"]
    by_target = {(r["method"], r["target"]): r for r in records}
    ok = by_target[("tools/call", "add")]
    assert (ok["event"], ok["outcome"], ok["error_code"], ok["protocol_version"]) == ("mcp.request", "ok", None, version)
    assert ok["principal"] and ok["transport"] == "streamable-http" and ok["duration_ms"] >= 0
    assert by_target[("tools/call", "fail")]["outcome"] == "tool_error"
    refused = by_target[("resources/read", "nowhere://x")]
    assert (refused["outcome"], refused["error_code"]) == ("error", -32602)
    if mode == "legacy":
        assert by_target[("notifications/initialized", None)]["event"] == "mcp.notification"
    assert all("arguments" not in r for r in records)


def _signed_in(environ: dict[str, Any]) -> str | None:
    """The principal hook of a site whose proxy names the signed-in user in ``X-User``."""
    return environ.get("HTTP_X_USER")


def test_the_rate_limit_refuses_at_once_naming_the_limit_and_spares_other_principals(
        serve_http: Callable[..., str]) -> None:
    url = serve_http(_server(RateLimitMiddleware(2, per=3600, methods={"tools/call"})), principal=_signed_in)
    first = legacy_handshake(url)
    assert first.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}
    assert first.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}
    refused = first.rpc("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})["error"]
    assert refused["code"] == INTERNAL_ERROR
    assert refused["message"].startswith("Rate limit exceeded: at most 2 requests per 3600 seconds per caller")
    assert refused["data"]["limit"] == 2 and refused["data"]["retryAfter"] > 0
    assert "result" in first.rpc("tools/list", {})  # only tools/call counts here
    with Client(url, mode="legacy", headers={"X-User": "ada"}) as ada:  # same address, another principal
        assert [ada.call_tool("add", {"a": 2, "b": n}).structured_content for n in range(2)] == [
            {"result": 2}, {"result": 3}]


def test_fresh_anonymous_sessions_share_their_address_s_rate_limit(serve_http: Callable[..., str]) -> None:
    """Opening a new session for every call buys no new calls: an anonymous session counts against
    the client's address too. A signed-in user from that address keeps a count of their own."""
    url = serve_http(_server(RateLimitMiddleware(2, per=600, methods={"tools/call"})), principal=_signed_in)
    outcomes = []
    for n in range(12):
        with Client(url, mode="legacy") as fresh:
            try:
                outcomes.append(fresh.call_tool("add", {"a": n, "b": 0}).structured_content)
            except MCPError as refused:
                assert refused.message.startswith("Rate limit exceeded: at most 2 requests per 600 seconds")
                outcomes.append(None)
    assert outcomes == [{"result": 0}, {"result": 1}] + [None] * 10
    with Client(url, mode="legacy", headers={"X-User": "ada"}) as ada:
        assert ada.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_anonymous_2026_requests_count_against_their_address(serve_http: Callable[..., str]) -> None:
    url = serve_http(_server(RateLimitMiddleware(2, per=600, methods={"tools/call"})))
    with Client(url, mode="2026-07-28") as one, Client(url, mode="2026-07-28") as other:
        one.call_tool("add", {"a": 1, "b": 1})
        other.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(MCPError, match="Rate limit exceeded"):
            one.call_tool("add", {"a": 1, "b": 1})


def test_the_rate_limit_in_the_2026_era(serve_http: Callable[..., str]) -> None:
    with Client(serve_http(_server(RateLimitMiddleware(2, per=3600, methods={"tools/call"}))), mode="auto") as client:
        client.call_tool("add", {"a": 1, "b": 1})
        client.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(MCPError) as refused:
            client.call_tool("add", {"a": 1, "b": 1})
    assert refused.value.message.startswith("Rate limit exceeded: at most 2 requests per 3600 seconds")


def test_the_rate_limit_forgets_callers_with_full_buckets() -> None:
    limit = RateLimitMiddleware(5, per=3600, max_tracked=2)
    for caller in ("a", "b"):
        assert limit._take(caller) is None
    assert limit._take("c") is None  # a and b are not full (one token spent): both kept
    assert set(limit._buckets) == {"a", "b", "c"}
    spare = RateLimitMiddleware(1, per=3600)
    assert spare._take("session:s", "address:x") is None
    assert spare._take("session:t", "address:x") is not None  # the address is spent: nothing taken
    assert spare._take("session:t") is None
    with pytest.raises(ValueError):
        RateLimitMiddleware(0)


def _slow_server() -> tuple[MCPServer, threading.Event, list[bool]]:
    mcp = _server()
    release = threading.Event()
    seen: list[bool] = []

    @mcp.tool(timeout=0.2)
    def slow(ctx: Context) -> str:
        release.wait(WAIT)
        seen.append(ctx.cancelled)
        return "late"

    return mcp, release, seen


@MODES
def test_a_tool_timeout_answers_at_once_and_lets_the_body_end(serve_http: Callable[..., str], mode: str,
                                                             version: str) -> None:
    mcp, release, seen = _slow_server()
    with Client(serve_http(mcp), mode=mode) as client:
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("slow", {})
        assert (timed_out.value.code, timed_out.value.message) == (REQUEST_TIMEOUT, "Tool 'slow' timed out after 0.2 seconds")
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}  # still serving
        release.set()
        assert wait_for(lambda: seen == [True], WAIT)  # the body ended, and saw ctx.cancelled
        assert client.call_tool("add", {"a": 2, "b": 2}).structured_content == {"result": 4}  # its late answer was dropped


def test_a_tool_timeout_over_stdio(tmp_path: Path) -> None:
    program = tmp_path / "slow_server.py"
    program.write_text(textwrap.dedent('''
        import threading
        from minimcp.server.mcpserver import Context, MCPServer

        mcp = MCPServer("slow")
        release = threading.Event()

        @mcp.tool(timeout=0.2)
        def slow(ctx: Context) -> str:
            release.wait(30)
            return "late"

        @mcp.tool()
        def go() -> str:
            release.set()
            return "released"

        mcp.run()
    '''))
    params = StdioServerParameters(command=sys.executable, args=[str(program)], env={"PYTHONPATH": str(ROOT)})
    with Client(params, mode="legacy") as client:
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("slow", {})
        assert timed_out.value.code == REQUEST_TIMEOUT
        assert client.call_tool("go", {}).content[0].text == "released"


def test_a_timeout_must_be_positive() -> None:
    mcp = MCPServer("t")

    def never() -> str:
        return "x"

    with pytest.raises(ValueError):
        mcp.tool(timeout=0)(never)
