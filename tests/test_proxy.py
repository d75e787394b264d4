"""The proxy (``create_proxy``, ``MCPServer.as_proxy``) against real upstream processes.

Upstreams: the minimcp server of ``tests/servers/proxy_upstream.py`` over stdio (a subprocess per
connection) and over HTTP (its own process), spoken to in either era (``mode`` of its entry), and
the official SDK's server over stdio. The proxy is served over real HTTP to minimcp's client in
both eras and to the official SDK's client. A question from upstream must reach the client in the
client's era, whatever the upstream's; an upstream that fails must be named in the error while the
gateway's other upstream keeps serving.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import mcp as official
import mcp_types as official_types
import pytest
from conftest import LEGACY, MODERN, ROOT, refusing_port, server_process

from minimcp import Client, MCPError, create_proxy
from minimcp.client import CancelScope, ClientRequestContext
from minimcp.server import MCPServer
from minimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    TextContent,
)

UPSTREAM = ROOT / "tests" / "servers" / "proxy_upstream.py"
OFFICIAL = ROOT / "tests" / "servers" / "official_confirm.py"
ENV = {"PYTHONPATH": str(ROOT)}
#: The upstream's era (the proxy's client mode toward it) and the client's, each pair once.
ERA_PAIRS = pytest.mark.parametrize(("upstream_mode", "mode"), [
    ("legacy", "legacy"), ("legacy", "auto"), ("auto", "legacy"), ("auto", "auto")])


def stdio_entry(mode: str = "auto", script: Any = UPSTREAM, *args: str, **settings: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(script), *args], "env": ENV, "mode": mode, **settings}


@pytest.fixture(scope="module")
def http_upstream() -> Iterator[str]:
    """The upstream program over HTTP in its own process; its endpoint URL."""
    with server_process([sys.executable, str(UPSTREAM), "--http"], env={**os.environ, **ENV}) as server:
        yield f"{server.base}/mcp"


@pytest.fixture
def serve_proxy(serve_http: Callable[..., str]) -> Iterator[Callable[..., str]]:
    """``serve_proxy(target) -> url``: a proxy of ``target`` served over real HTTP, closed afterwards."""
    proxies: list[MCPServer] = []

    def serve(target: Any, **options: Any) -> str:
        proxy = create_proxy(target, **options)
        proxies.append(proxy)
        return serve_http(proxy)

    yield serve
    for proxy in proxies:
        proxy.close()


def accepting(asked: list[str], content: dict[str, Any] | None = None) -> Callable[..., ElicitResult]:
    def answer(context: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content=content if content is not None else {"proceed": True})

    return answer


# --- questions across eras ------------------------------------------------------------------------------
@ERA_PAIRS
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_form_elicitation_reaches_the_client_in_its_era(serve_proxy: Callable[..., str], http_upstream: str,
                                                        transport: str, upstream_mode: str, mode: str) -> None:
    entry = stdio_entry(upstream_mode) if transport == "stdio" else {"url": http_upstream, "mode": upstream_mode}
    url = serve_proxy({"mcpServers": {"up": entry}})
    asked: list[str] = []
    with Client(url, mode=mode, elicitation_callback=accepting(asked)) as client:
        result = client.call_tool("confirm", {"item": "lamp"})
        assert client.protocol_version == (LEGACY if mode == "legacy" else MODERN)
    assert result.content[0].text == "lamp: accept proceed=True"
    assert asked == ["Proceed with lamp?"]


@pytest.mark.parametrize(("upstream_mode", "mode"), [("legacy", "auto"), ("auto", "legacy")])
def test_url_elicitation_is_relayed(serve_proxy: Callable[..., str], upstream_mode: str, mode: str) -> None:
    seen: list[Any] = []

    def answer(context: ClientRequestContext, params: Any) -> ElicitResult:
        seen.append((params.mode, params.url))
        return ElicitResult(action="accept")

    url = serve_proxy({"mcpServers": {"up": stdio_entry(upstream_mode)}})
    with Client(url, mode=mode, elicitation_callback=answer) as client:
        assert client.call_tool("visit", {}).content[0].text == "visit: accept"
    assert seen == [("url", "https://example.com/consent")]


@pytest.mark.parametrize(("upstream_mode", "mode"), [("legacy", "legacy"), ("legacy", "auto")])
def test_a_client_without_elicitation_gets_the_refusal_it_would_give(serve_proxy: Callable[..., str],
                                                                     upstream_mode: str, mode: str) -> None:
    with Client(serve_proxy({"mcpServers": {"up": stdio_entry(upstream_mode)}}), mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            client.call_tool("confirm", {"item": "lamp"})
    assert refused.value.message == "Elicitation not supported"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_server_over_stdio_asks_through_the_proxy(serve_proxy: Callable[..., str], mode: str) -> None:
    url = serve_proxy({"mcpServers": {"official": stdio_entry("auto", OFFICIAL, "--stdio")}})
    asked: list[str] = []
    with Client(url, mode=mode, elicitation_callback=accepting(asked, {"confirm": True})) as client:
        assert [tool.name for tool in client.list_tools().tools] == ["confirm"]
        assert client.call_tool("confirm", {"n": 7}).content[0].text == "confirmed 7"
    assert asked == ["Proceed with item 7?"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_is_asked_through_the_proxy(serve_proxy: Callable[..., str], mode: str) -> None:
    url = serve_proxy({"mcpServers": {"up": stdio_entry("legacy")}})
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> official_types.ElicitResult:
        asked.append(params.message)
        return official_types.ElicitResult(action="accept", content={"proceed": True})

    async def main() -> tuple[str, str]:
        async with official.Client(url, mode=mode, elicitation_callback=on_elicit) as client:
            echoed = await client.call_tool("echo", {"text": "hi"})
            confirmed = await client.call_tool("confirm", {"item": "desk"})
            return echoed.content[0].text, confirmed.content[0].text

    assert anyio.run(main) == ("hi", "desk: accept proceed=True")
    assert asked == ["Proceed with desk?"]


def sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    assert params.messages[0].content.text == "Capital of France?"
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"), model="m")


def roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///w", name="W"), Root(uri="file:///x")])


@pytest.mark.parametrize(("upstream_mode", "mode"), [("legacy", "auto"), ("auto", "legacy")])
def test_sampling_and_roots_are_relayed(serve_proxy: Callable[..., str], upstream_mode: str, mode: str) -> None:
    url = serve_proxy({"mcpServers": {"up": stdio_entry(upstream_mode)}})
    with Client(url, mode=mode, sampling_callback=sample, list_roots_callback=roots) as client:
        assert client.call_tool("ask_model", {}).content[0].text == "model said Paris"
        assert client.call_tool("count_roots", {}).content[0].text == "2 root(s)"


# --- what the upstream tells, and cancelling -----------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_progress_and_log_lines_are_relayed(serve_proxy: Callable[..., str], http_upstream: str, mode: str) -> None:
    url = serve_proxy(http_upstream)
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[LoggingMessageNotificationParams] = []
    with Client(url, mode=mode, logging_callback=logs.append, log_level="debug") as client:
        result = client.call_tool("work", {"steps": 3}, progress_callback=lambda p, t, m: progress.append((p, t, m)))
    assert result.content[0].text == "did 3 steps"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert [(log.level, log.data, log.logger) for log in logs] == [("info", f"did step {n}", "worker") for n in (1, 2, 3)]


@pytest.mark.parametrize(("upstream_mode", "mode"), [("legacy", "legacy"), ("auto", "auto")])
def test_a_cancelled_call_is_cancelled_upstream(serve_http: Callable[..., str], serve_proxy: Callable[..., str],
                                                upstream_mode: str, mode: str) -> None:
    from servers.proxy_upstream import upstream

    server = upstream()
    url = serve_proxy(serve_http(server), mode=upstream_mode)
    with Client(url, mode=mode) as client:
        with CancelScope() as scope:
            threading.Timer(0.5, scope.cancel).start()
            client.call_tool("wait_for_cancel", {})
        assert scope.cancelled_caught
        assert server.cancelled_seen.wait(5), "the upstream never saw the call cancelled"
        assert client.call_tool("echo", {"text": "after"}).content[0].text == "after"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_upstream_errors_reach_the_client_as_themselves(serve_proxy: Callable[..., str], http_upstream: str,
                                                        mode: str) -> None:
    with Client(serve_proxy(http_upstream), mode=mode) as client:
        failed = client.call_tool("fail", {})
        assert failed.is_error and failed.content[0].text == "Error executing tool fail: the tool failed on purpose"
        with pytest.raises(MCPError) as refused:
            client.call_tool("refuse", {})
    assert (refused.value.code, refused.value.message, refused.value.data) == (
        -32042, "refused on purpose", {"why": "testing"})


# --- a gateway of several, and upstreams that fail -------------------------------------------------------
def test_a_gateway_serves_each_upstream_under_its_name(serve_proxy: Callable[..., str], http_upstream: str) -> None:
    url = serve_proxy({"mcpServers": {"files": stdio_entry("legacy"), "web": {"url": http_upstream}}})
    with Client(url) as client:
        names = {tool.name for tool in client.list_tools().tools}
        assert {"files_echo", "web_echo", "files_confirm", "web_nap"} <= names
        assert client.call_tool("files_echo", {"text": "a"}).content[0].text == "a"
        assert client.call_tool("web_echo", {"text": "b"}).content[0].text == "b"
        assert client.get_prompt("web_greet", {"who": "Ada"}).messages[0].content.text == "Hello, Ada!"
        listed = {str(resource.uri) for resource in client.list_resources().resources}
        assert {"notes://files/today", "notes://web/today"} <= listed  # mount's rule: the namespace after scheme://
        assert client.read_resource("notes://web/today").contents[0].text == "buy milk"


@pytest.fixture
def garbage_url() -> Iterator[str]:
    """A tiny HTTP server that answers every request with junk."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n"
                                 b"Connection: close\r\n\r\n<html>junk!!")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    stop.set()
    thread.join(5)
    listener.close()


def assert_named_failure(client: Client, tool: str, arguments: dict[str, Any], upstream: str, said: str) -> None:
    started = time.monotonic()
    with pytest.raises(MCPError) as failed:
        client.call_tool(tool, arguments)
    assert time.monotonic() - started < 10
    assert f"Upstream {upstream!r}" in failed.value.message and said in failed.value.message
    assert failed.value.data == {"upstream": upstream}
    assert client.call_tool("good_echo", {"text": "still here"}).content[0].text == "still here"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_down_upstream_is_named_and_the_others_served(serve_proxy: Callable[..., str], mode: str) -> None:
    with refusing_port() as port:
        url = serve_proxy({"mcpServers": {"good": stdio_entry(), "down": {"url": f"http://127.0.0.1:{port}/mcp"}}})
        with Client(url, mode=mode) as client:
            assert {"good_echo"} <= {tool.name for tool in client.list_tools().tools}
            assert_named_failure(client, "down_echo", {"text": "x"}, "down", "is unreachable")


def test_a_slow_upstream_times_out_by_name(serve_proxy: Callable[..., str], http_upstream: str) -> None:
    url = serve_proxy({"mcpServers": {"good": stdio_entry(), "slow": {"url": http_upstream, "timeout": 1}}})
    with Client(url) as client:
        assert_named_failure(client, "slow_nap", {"seconds": 5}, "slow", "did not answer tools/call within 1 s")


def test_a_garbage_answering_upstream_is_named(serve_proxy: Callable[..., str], garbage_url: str) -> None:
    url = serve_proxy({"mcpServers": {"good": stdio_entry(), "junk": {"url": garbage_url, "connect_timeout": 3}}})
    with Client(url) as client:
        assert_named_failure(client, "junk_echo", {"text": "x"}, "junk", "")


def test_an_upstream_that_exits_mid_call_is_named(serve_proxy: Callable[..., str]) -> None:
    url = serve_proxy({"mcpServers": {"good": stdio_entry(), "dying": stdio_entry("legacy")}})
    with Client(url) as client:
        assert_named_failure(client, "dying_die", {}, "dying", "closed the connection during tools/call")
        assert client.call_tool("dying_echo", {"text": "reborn"}).content[0].text == "reborn"


# --- tasks ----------------------------------------------------------------------------------------------
def test_a_task_augmented_call_runs_as_the_upstreams_task(serve_proxy: Callable[..., str], http_upstream: str) -> None:
    with Client(serve_proxy(http_upstream)) as client:
        handle = client.call_tool("long_job", {"n": 4}, task=True)
        assert handle.task_id is not None and handle.task_id.startswith("127.0.0.1/")
        assert client.task(handle.task_id).status().task_id == handle.task_id
        assert handle.result(10).content[0].text == "job 4 done"


# --- what an upstream tells every client -----------------------------------------------------------------
def test_an_upstream_list_change_reaches_the_proxys_clients(serve_http: Callable[..., str],
                                                            serve_proxy: Callable[..., str]) -> None:
    from servers.proxy_upstream import upstream

    server = upstream()
    url = serve_proxy(serve_http(server), mode="legacy")
    with Client(url) as client:
        assert "nap" in {tool.name for tool in client.list_tools(cache_mode="bypass").tools}
        with client.listen(tools_list_changed=True) as changes:
            server.disable("nap")  # the upstream tells its legacy sessions, the proxy's pooled one among them
            assert type(changes.next(timeout=5)).__name__ == "ToolsListChanged"
        assert "nap" not in {tool.name for tool in client.list_tools(cache_mode="bypass").tools}


def test_an_upstream_resource_update_reaches_a_subscriber(serve_http: Callable[..., str],
                                                          serve_proxy: Callable[..., str]) -> None:
    import queue

    from servers.proxy_upstream import upstream

    from minimcp.shared.subscriptions import ResourceUpdated

    server = upstream()
    url = serve_proxy(serve_http(server), mode="legacy")
    heard: queue.Queue[Any] = queue.Queue()
    with Client(url, mode="legacy", message_handler=heard.put) as client:
        client.subscribe_resource("notes://today")
        server.subscriptions.publish(ResourceUpdated(uri="notes://today"))
        deadline = time.monotonic() + 5
        while True:
            message = heard.get(timeout=max(0.0, deadline - time.monotonic()))
            if getattr(message, "method", None) == "notifications/resources/updated":
                break
    assert str(message.params.uri) == "notes://today"
