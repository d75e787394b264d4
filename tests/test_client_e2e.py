"""The real client against the real server, on every transport and in both eras.

Transports: in-memory (``Client(mcp)``), Streamable HTTP (minimcp's HTTP server on a loopback
port) and stdio (a subprocess running the same server file). Modes: ``legacy`` (server-to-client
requests) and ``auto`` (which lands on 2026-07-28 and answers questions by retrying).
"""

from __future__ import annotations

import runpy
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import MODES, ROOT, refusing_port
import pytest
import requests

from minimcp import Client, MCPError, StdioServerParameters
from minimcp.client import ClientRequestContext
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult

SERVER = textwrap.dedent(
    '''
    import time
    from pydantic import BaseModel
    from minimcp import MCPError
    from minimcp.server import MCPServer
    from minimcp.server.mcpserver import Context

    mcp = MCPServer("e2e", instructions="be kind")

    class Quantity(BaseModel):
        copies: int

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def reserve(title: str, ctx: Context) -> str:
        answer = ctx.elicit("How many copies?", Quantity)
        if answer.action != "accept":
            return f"no reservation ({answer.action})"
        return f"Reserved {answer.data.copies} of {title!r}."

    @mcp.tool()
    def careful(ctx: Context) -> str:
        try:
            ctx.elicit("Anything?", Quantity)
        except MCPError as failure:
            return f"{failure.code}: {failure.message}"
        return "answered"

    @mcp.tool()
    def steps(ctx: Context) -> str:
        for step in (1, 2, 3):
            ctx.report_progress(step, 3, f"step {step}")
        return "walked"

    @mcp.tool()
    def slow(seconds: float) -> str:
        time.sleep(seconds)
        return "late"

    @mcp.tool()
    def pay(booking_id: str, ctx: Context) -> str:
        ctx.session.send_elicit_complete(f"deposit-{booking_id}")
        return f"Deposit received for booking {booking_id}."

    if __name__ == "__main__":
        mcp.run()
    '''
)



@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "e2e_server.py"
    path.write_text(SERVER)
    return path


@pytest.fixture
def in_process(server_file: Path) -> Any:
    return runpy.run_path(str(server_file))["mcp"]


def copies(context: ClientRequestContext, params: Any) -> ElicitResult:
    assert params.message in ("How many copies?", "Anything?")
    return ElicitResult(action="accept", content={"copies": 2})




@MODES
def test_call_and_identity(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info.name == "e2e"
        assert client.instructions == "be kind"
        assert [tool.name for tool in client.list_tools().tools][:2] == ["echo", "reserve"]
        assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"


@MODES
def test_elicitation_answered_through_the_callback(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode, elicitation_callback=copies) as client:
        result = client.call_tool("reserve", {"title": "Dune"})
    assert result.content[0].text == "Reserved 2 of 'Dune'."


@MODES
def test_no_callback_means_elicitation_not_supported(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        with pytest.raises(MCPError) as failure:
            client.call_tool("reserve", {"title": "Dune"})
    assert (failure.value.code, str(failure.value)) == (-32600, "Elicitation not supported")


@MODES
def test_progress_callbacks_all_return_before_call_tool(target: Any, mode: str, version: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    def slow_progress(progress: float, total: float | None, message: str | None) -> None:
        time.sleep(0.05)
        seen.append((progress, total, message))

    with Client(target, mode=mode) as client:
        assert client.call_tool("steps", {}, progress_callback=slow_progress).content[0].text == "walked"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_legacy_callback_exception_reaches_the_server_as_code_zero(target: Any) -> None:
    def explode(context: ClientRequestContext, params: Any) -> ElicitResult:
        raise ValueError("the user walked away")

    with Client(target, mode="legacy", elicitation_callback=explode) as client:
        assert client.call_tool("careful", {}).content[0].text == "0: the user walked away"


def test_legacy_elicit_complete_reaches_message_handler(target: Any) -> None:
    received = threading.Event()
    ids: list[str] = []

    def handler(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/elicitation/complete":
            ids.append(message.params.elicitation_id)
            received.set()

    with Client(target, mode="legacy", message_handler=handler) as client:
        assert client.call_tool("pay", {"booking_id": "42"}).content[0].text == "Deposit received for booking 42."
        assert received.wait(5)
    assert ids == ["deposit-42"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_read_timeout(in_process: Any, serve_http: Callable[..., str], mode: str) -> None:
    for target in (in_process, serve_http(in_process)):
        with Client(target, mode=mode, read_timeout_seconds=0.5) as client:
            with pytest.raises(MCPError) as failure:
                client.call_tool("slow", {"seconds": 3})
            assert (failure.value.code, str(failure.value)) == (-32001, "Request 'tools/call' timed out")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_read_timeout_holds_while_the_server_keeps_reporting_progress(serve_http: Callable[..., str],
                                                                          mode: str) -> None:
    """The timeout bounds the whole wait. In memory it counted only silent seconds: progress every
    50 ms kept the caller waiting for as long as the tool ran (here 10 s, then "done")."""
    mcp = MCPServer("Chatty")
    stop = threading.Event()

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        for step in range(200):
            if stop.wait(0.05):
                break
            ctx.report_progress(step)
        return "done"

    try:
        for target in (mcp, serve_http(mcp)):
            with Client(target, mode=mode) as client:
                with pytest.raises(MCPError) as failure:
                    client.call_tool("chatty", read_timeout_seconds=0.5, progress_callback=lambda *_: None)
                assert (failure.value.code, str(failure.value)) == (-32001, "Request 'tools/call' timed out")
    finally:
        stop.set()


def test_shared_client_serves_many_threads(target: Any) -> None:
    with Client(target, elicitation_callback=copies) as client:
        results: dict[int, str] = {}

        def work(n: int) -> None:
            results[n] = client.call_tool("echo", {"text": str(n)}).content[0].text

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == {n: str(n) for n in range(8)}


def test_http_session_is_deleted_on_close(in_process: Any, serve_http: Callable[..., str]) -> None:
    url = serve_http(in_process)
    with Client(url, mode="legacy") as client:
        session_id = client.session.transport.session_id
        assert session_id
    gone = requests.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25",
                 "Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert gone.status_code == 404


def test_non_jsonrpc_http_error(in_process: Any, serve_http: Callable[..., str]) -> None:
    url = serve_http(in_process)
    http = requests.Session()
    http.headers["Host"] = "evil.example.com"
    with pytest.raises(MCPError, match="^Server returned an error response$") as failure:
        Client(streamable_http_client(url, http_client=http), mode="legacy").__enter__()
    http.close()
    assert (failure.value.code, failure.value.data) == (-32603, {"status": 421})


def test_dead_http_server_reports_connection_closed() -> None:
    with refusing_port() as port, Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client:
        with pytest.raises(MCPError) as failure:
            client.list_tools()
    assert (failure.value.code, str(failure.value)) == (-32000, "Connection closed")


def test_dead_stdio_server_reports_connection_closed(server_file: Path) -> None:
    env = {"PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(command=sys.executable, args=[str(server_file)], env=env)
    with Client(params, mode="legacy") as client:
        client.session.transport._process.kill()
        with pytest.raises(MCPError) as failure:
            client.call_tool("echo", {"text": "x"})
    assert (failure.value.code, str(failure.value)) == (-32000, "Connection closed")


def test_client_learns_argument_headers_again_when_the_server_asks_for_them(serve_http: Callable[..., str]) -> None:
    """-32020 on tools/call: the client lists the tools again and retries once, so a tool that was
    never listed, or redefined with another ``x-mcp-header`` since, is still callable."""
    from typing import Annotated

    from pydantic import Field

    from minimcp.server import MCPServer

    mcp = MCPServer("headers", log_level="WARNING")
    seen: list[str] = []

    def route(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        seen.append(region)
        return f"routed to {region}"

    def route_v2(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Zone"})]) -> str:
        seen.append(region)
        return f"zoned to {region}"

    mcp.add_tool(route, name="route")
    url = serve_http(mcp)
    with Client(url, mode="2026-07-28") as client:
        assert client.call_tool("route", {"region": "eu"}).content[0].text == "routed to eu"  # never listed
        mcp.remove_tool("route")
        mcp.add_tool(route_v2, name="route")
        assert client.call_tool("route", {"region": "us"}).content[0].text == "zoned to us"  # redefined
        assert client.call_tool("route", {"region": "ap"}).content[0].text == "zoned to ap"  # learned
    assert seen == ["eu", "us", "ap"]


class _RecordingSession(requests.Session):
    """A caller's own session (requests has no session-wide timeout) that notes each request's timeout."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[tuple[str, Any]] = []

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        self.timeouts.append((str(method), kwargs.get("timeout")))
        return super().request(method, url, *args, **kwargs)


@MODES
def test_a_callers_session_gets_a_read_timeout_on_every_request(mode: str, version: str, in_process: Any,
                                                               serve_http: Callable[..., str]) -> None:
    """A server that stops answering must not hold the caller forever because the session was theirs."""
    http = _RecordingSession()
    with Client(streamable_http_client(serve_http(in_process), http_client=http), mode=mode) as client:
        client.list_tools()
    http.close()
    assert http.timeouts
    for method, timeout in http.timeouts:
        assert isinstance(timeout, tuple) and timeout[1] is not None and timeout[1] > 0, (method, timeout)
