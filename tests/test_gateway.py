"""A gateway of several upstreams (``create_proxy`` of an ``mcpServers`` configuration): one
``ProxyServer`` per upstream, mounted under its name, so that names and resource URIs follow
``MCPServer.mount``'s rule; an upstream's tasks, completions, list changes and resource updates
pass through the mount.

Upstreams: the minimcp server of ``tests/servers/proxy_upstream.py``, served over real HTTP (in
this process, so a test can change it at runtime) and spoken to in either era; the gateway is
served over real HTTP to minimcp's client in both eras.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from servers.proxy_upstream import upstream

from minimcp import Client, create_proxy
from minimcp.server import MCPServer
from minimcp.server.app.proxy import Gateway, ProxyServer
from minimcp.shared.subscriptions import ResourceUpdated, ToolsListChanged
from minimcp.types import PromptReference, ResourceTemplateReference


@pytest.fixture
def serve_gateway(serve_http: Callable[..., str]) -> Iterator[Callable[..., tuple[str, MCPServer]]]:
    """``serve_gateway(target) -> (url, server)``: ``create_proxy(target)`` over real HTTP, closed afterwards."""
    made: list[MCPServer] = []

    def serve(target: Any, **options: Any) -> tuple[str, MCPServer]:
        server = create_proxy(target, **options)
        made.append(server)
        return serve_http(server), server

    yield serve
    for server in made:
        server.close()


@pytest.fixture
def upstreams(serve_http: Callable[..., str]) -> dict[str, tuple[str, MCPServer]]:
    """Two upstream servers over HTTP, by name: ``(url, server)``."""
    found = {}
    for name in ("a", "b"):
        server = upstream(name)
        found[name] = (serve_http(server), server)
    return found


def configuration(upstreams: dict[str, tuple[str, MCPServer]], mode: str = "auto") -> dict[str, Any]:
    return {"mcpServers": {name: {"url": url, "mode": mode} for name, (url, _) in upstreams.items()}}


def next_message(heard: queue.Queue[Any], method: str, seconds: float = 5.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        message = heard.get(timeout=max(0.0, deadline - time.monotonic()))
        if getattr(message, "method", None) == method:
            return message


# --- names: mount's rule, and nothing else ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_gateway_mounts_a_proxy_per_upstream_under_its_name(serve_gateway: Callable[..., tuple[str, MCPServer]],
                                                              upstreams: dict[str, tuple[str, MCPServer]],
                                                              mode: str) -> None:
    url, gateway = serve_gateway(configuration(upstreams))
    assert isinstance(gateway, Gateway)
    assert [(m.namespace, type(m.child)) for m in gateway.mounts] == [("a", ProxyServer), ("b", ProxyServer)]
    with Client(url, mode=mode) as client:
        assert {"a_echo", "b_echo", "a_long_job"} <= {tool.name for tool in client.list_tools().tools}
        assert client.call_tool("b_echo", {"text": "hi"}).content[0].text == "hi"
        assert {"notes://a/today", "notes://b/today"} <= {str(r.uri) for r in client.list_resources().resources}
        templates = {t.uri_template for t in client.list_resource_templates().resource_templates}
        assert {"notes://a/day/{day}", "notes://b/day/{day}"} <= templates
        assert client.read_resource("notes://a/today").contents[0].text == "buy milk"
        read = client.read_resource("notes://b/day/friday").contents[0]
        assert (read.text, str(read.uri)) == ("notes of friday", "notes://b/day/friday")
        assert client.get_prompt("a_greet", {"who": "Ada"}).messages[0].content.text == "Hello, Ada!"
        assert {"a_greet", "b_greet"} <= {prompt.name for prompt in client.list_prompts().prompts}


def test_a_configuration_of_one_is_a_proxy_under_the_upstreams_own_names(
        serve_gateway: Callable[..., tuple[str, MCPServer]], upstreams: dict[str, tuple[str, MCPServer]]) -> None:
    url, proxy = serve_gateway({"mcpServers": {"a": {"url": upstreams["a"][0]}}})
    assert isinstance(proxy, ProxyServer) and not proxy.mounts
    with Client(url) as client:
        assert "echo" in {tool.name for tool in client.list_tools().tools}
        assert client.read_resource("notes://today").contents[0].text == "buy milk"


def test_several_upstreams_are_not_one_proxy(upstreams: dict[str, tuple[str, MCPServer]]) -> None:
    from minimcp.server.app.proxy.config import read_configuration

    with pytest.raises(ValueError, match="serve several with Gateway"):
        ProxyServer(read_configuration(configuration(upstreams)).values())


def test_an_entry_name_that_cannot_be_a_namespace_is_refused_at_start_up() -> None:
    from minimcp.server.app.proxy import ProxyConfigError

    with pytest.raises(ProxyConfigError, match="namespace its tools, prompts and resources are served under"):
        create_proxy({"mcpServers": {"my files": {"url": "http://127.0.0.1:1/mcp"}}})


# --- tasks through the mount ----------------------------------------------------------------------------
def test_an_upstream_task_passes_through_the_gateway(serve_gateway: Callable[..., tuple[str, MCPServer]],
                                                    upstreams: dict[str, tuple[str, MCPServer]]) -> None:
    url, _ = serve_gateway(configuration(upstreams))
    with Client(url) as client:
        handle = client.call_tool("b_long_job", {"n": 7}, task=True)
        assert handle.task_id is not None and handle.task_id.startswith("b/")
        assert client.task(handle.task_id).status().task_id == handle.task_id
        assert handle.result(10).content[0].text == "job 7 done"


def test_a_proxy_mounted_in_ones_own_server_answers_for_its_tasks(serve_http: Callable[..., str],
                                                                  upstreams: dict[str, tuple[str, MCPServer]]) -> None:
    mine = MCPServer("mine")

    @mine.tool()
    def hello() -> str:
        return "hello"

    proxy = create_proxy(upstreams["a"][0], upstream_name="remote")
    mine.mount(proxy, namespace="remote")
    try:
        with Client(serve_http(mine)) as client:
            handle = client.call_tool("remote_long_job", {"n": 3}, task=True)
            assert handle.task_id is not None and handle.task_id.startswith("remote/")
            assert handle.result(10).content[0].text == "job 3 done"
            assert client.call_tool("hello", {}).content[0].text == "hello"
    finally:
        proxy.close()


# --- completions ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_upstreams_completion_is_relayed(serve_gateway: Callable[..., tuple[str, MCPServer]],
                                            upstreams: dict[str, tuple[str, MCPServer]], mode: str) -> None:
    url, _ = serve_gateway(configuration(upstreams))
    single, _ = serve_gateway(upstreams["a"][0])
    with Client(url, mode=mode) as client, Client(single, mode=mode) as direct:
        prompt = client.complete(PromptReference(type="ref/prompt", name="a_greet"), {"name": "who", "value": "A"})
        assert prompt.completion.values == ["Ada", "Alan"]
        template = client.complete(ResourceTemplateReference(type="ref/resource", uri="notes://b/day/{day}"),
                                   {"name": "day", "value": "t"})
        assert template.completion.values == ["tuesday"]
        alone = direct.complete(PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "G"})
        assert alone.completion.values == ["Grace"]


# --- what an upstream tells every client -------------------------------------------------------------------
@pytest.mark.parametrize("upstream_mode", ["legacy", "auto"])
def test_an_upstream_list_change_reaches_a_legacy_client_of_the_gateway(
        serve_gateway: Callable[..., tuple[str, MCPServer]], upstreams: dict[str, tuple[str, MCPServer]],
        upstream_mode: str) -> None:
    url, _ = serve_gateway(configuration(upstreams, upstream_mode))
    heard: queue.Queue[Any] = queue.Queue()
    with Client(url, mode="legacy", message_handler=heard.put) as client:
        assert "b_shout" not in {tool.name for tool in client.list_tools(cache_mode="bypass").tools}

        def shout(text: str) -> str:
            return text.upper()

        server = upstreams["b"][1]
        server.add_tool(shout)  # at runtime, upstream; a server not mounted announces it when told to
        server.notify_list_changed("tool")
        next_message(heard, "notifications/tools/list_changed")
        assert client.call_tool("b_shout", {"text": "hey"}).content[0].text == "HEY"
        assert "b_shout" in {tool.name for tool in client.list_tools(cache_mode="bypass").tools}


@pytest.mark.parametrize("upstream_mode", ["legacy", "auto"])
def test_an_upstream_list_change_reaches_a_listen_on_the_gateway(
        serve_gateway: Callable[..., tuple[str, MCPServer]], upstreams: dict[str, tuple[str, MCPServer]],
        upstream_mode: str) -> None:
    url, _ = serve_gateway(configuration(upstreams, upstream_mode))
    with Client(url) as client:
        assert "a_nap" in {tool.name for tool in client.list_tools(cache_mode="bypass").tools}
        with client.listen(tools_list_changed=True) as changes:
            upstreams["a"][1].disable("nap")
            assert changes.next(timeout=5) == ToolsListChanged()
        assert "a_nap" not in {tool.name for tool in client.list_tools(cache_mode="bypass").tools}


@pytest.mark.parametrize("upstream_mode", ["legacy", "auto"])
def test_an_upstream_resource_update_reaches_a_legacy_subscriber_by_the_gateways_uri(
        serve_gateway: Callable[..., tuple[str, MCPServer]], upstreams: dict[str, tuple[str, MCPServer]],
        upstream_mode: str) -> None:
    url, _ = serve_gateway(configuration(upstreams, upstream_mode))
    heard: queue.Queue[Any] = queue.Queue()
    with Client(url, mode="legacy", message_handler=heard.put) as client:
        client.subscribe_resource("notes://b/today")
        upstreams["b"][1].subscriptions.publish(ResourceUpdated(uri="notes://today"))
        message = next_message(heard, "notifications/resources/updated")
    assert str(message.params.uri) == "notes://b/today"


@pytest.mark.parametrize("upstream_mode", ["legacy", "auto"])
def test_an_upstream_resource_update_reaches_a_listen_by_the_gateways_uri(
        serve_gateway: Callable[..., tuple[str, MCPServer]], upstreams: dict[str, tuple[str, MCPServer]],
        upstream_mode: str) -> None:
    url, _ = serve_gateway(configuration(upstreams, upstream_mode))
    with Client(url) as client, client.listen(resource_subscriptions=["notes://a/today"]) as updates:
        upstreams["a"][1].subscriptions.publish(ResourceUpdated(uri="notes://today"))
        assert updates.next(timeout=5) == ResourceUpdated(uri="notes://a/today")


# --- a gateway under gunicorn -w 2 on the Redis backend ------------------------------------------------------
@pytest.fixture
def gateway_workers(redis_server: Any) -> Iterator[Any]:
    """``gunicorn -w 2`` of ``tests/servers/gateway_app.py`` sharing ``redis_server``, over one upstream
    process (``tests/servers/shared_server.py``, whose ``confirm`` tool elicits)."""
    import sys

    from cluster_support import SERVERS, server_env
    from conftest import server_process

    with server_process([sys.executable, str(SERVERS / "shared_server.py")], server_env(None), cwd=SERVERS) as up:
        env = {**server_env(redis_server.url), "MINIMCP_TEST_UPSTREAM": f"{up.base}/mcp"}
        # A legacy client waiting on a question holds two threads (its GET stream, its call) and its
        # answer takes a third: 16 serve the test's four clients even were all on one worker.
        command = [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "gthread", "--threads", "16",
                   "--no-control-socket", "--graceful-timeout", "2", "-b", "127.0.0.1:0", "gateway_app:app"]
        with server_process(command, env, cwd=SERVERS) as gateway:
            yield gateway


def test_a_relayed_legacy_question_is_answered_whichever_worker_the_answer_lands_on(gateway_workers: Any) -> None:
    """Four legacy clients at once, every request on a new connection, so the kernel spreads the
    calls and the answers' POSTs over both workers; each question comes from the upstream through
    the worker running the call, and its answer may land on the other."""
    from concurrent.futures import ThreadPoolExecutor

    from cluster_support import accept, client_of

    rounds = 4

    def session(who: int) -> tuple[set[int], list[str]]:
        client, _ = client_of(gateway_workers, mode="legacy", elicitation_callback=accept, read_timeout_seconds=60)
        with client:
            texts = [client.call_tool(f"{entry}_confirm", {"door": f"{who}.{n}"}).content[0].text
                     for n in range(rounds) for entry in ("old", "new")]
            pids = {client.call_tool("pid", {}).structured_content["result"] for _ in range(rounds)}
        return pids, texts

    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(session, range(4)))
    for who, (_, texts) in enumerate(done):
        assert texts == [f"{who}.{n}: accept True" for n in range(rounds) for _ in ("old", "new")]
    assert len(set().union(*(pids for pids, _ in done))) == 2  # both workers served
