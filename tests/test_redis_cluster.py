"""A shared backend on a real Redis Cluster of three masters, started by the test.

Two servers (built from the cluster's URL, and from a ``RedisCluster`` client) share sessions and
tasks over real HTTP: legacy sessions answer their elicitations wherever their keys landed (each
session's keys in one slot, the sessions spread over the masters), and a task made on one server is
polled to its result on the other.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from pydantic import BaseModel
from redis.cluster import ClusterNode, RedisCluster
from redis_support import Node, cluster
from test_tasks_server import TASKS, call, created, poll, task_rpc, terminal

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.backends import BackendMisconfigured, RedisBackend
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult


class Ok(BaseModel):
    ok: bool


@pytest.fixture(scope="module")
def nodes() -> Iterator[list[Node]]:
    with tempfile.TemporaryDirectory(prefix="minimcp-cluster-", dir="/tmp") as directory, \
            cluster(Path(directory)) as started:
        yield started


def url_of(nodes: list[Node], tail: str = "") -> str:
    return "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in nodes[:2]) + tail


def build(backend: Any) -> MCPServer:
    mcp = MCPServer("Clustered", backend=backend)

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"

    @mcp.tool(task=True)
    def add(a: int, b: int) -> int:
        return a + b

    return mcp


def agree(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


@contextlib.contextmanager
def two_servers(nodes: list[Node], serve_http: Callable[..., str], prefix: str) -> Iterator[tuple[str, str]]:
    """One server built from the cluster's URL, one from a ``RedisCluster`` client of its own."""
    client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[2].port)], socket_timeout=5)
    first, second = build(url_of(nodes, f"?prefix={prefix}")), build(RedisBackend(client, prefix=prefix))
    try:
        yield serve_http(first), serve_http(second)
    finally:
        for mcp in (first, second):
            mcp.close()  # the task channel's thread too
            mcp.backend.close()
        client.close()


def masters_holding(nodes: list[Node], pattern: str) -> set[int]:
    """The ports of the masters holding a key that matches ``pattern``."""
    held = set()
    for node in nodes:
        with contextlib.closing(node.client()) as client:
            if any(True for _ in client.scan_iter(pattern)):
                held.add(node.port)
    return held


def test_legacy_sessions_spread_over_the_masters_answer_their_elicitations_on_either_server(
        nodes: list[Node], serve_http: Callable[..., str]) -> None:
    with two_servers(nodes, serve_http, "spread") as (first, second):
        texts = []
        for n in range(12):
            transport = streamable_http_client(first if n % 2 else second, terminate_on_close=False)
            with Client(transport, mode="legacy", elicitation_callback=agree) as client:
                texts.extend(client.call_tool("confirm", {"door": f"{kind}{n}"}).content[0].text for kind in "de")
        assert texts == [f"{kind}{n}: accept True" for n in range(12) for kind in "de"]
        # Each session is tagged by its own id: twelve of them land on more than one master (all on
        # one would happen about once in 200,000 runs).
        assert len(masters_holding(nodes, "spread:s:{*}")) >= 2


def test_a_task_made_on_one_server_is_polled_to_its_result_on_the_other(
        nodes: list[Node], serve_http: Callable[..., str]) -> None:
    with two_servers(nodes, serve_http, "tasked") as (first, second):
        task_ids = [created(call(first, "add", {"a": n, "b": 1})) for n in range(3)]
        for n, task_id in enumerate(task_ids):
            done = poll(second, task_id, terminal)
            assert done["status"] == "completed", done
            assert done["result"]["structuredContent"] == {"result": n + 1}
            fetched = task_rpc(first, "tasks/get", task_id, TASKS)["result"]
            assert fetched["status"] == "completed"
    # One store, one slot: every key of the task store sits on one master.
    assert len(masters_holding(nodes, "tasked:tasks:{*}:task:*")) == 1


def test_a_node_given_as_one_server_is_refused_naming_the_cluster_url(nodes: list[Node]) -> None:
    with pytest.raises(BackendMisconfigured) as wrong:
        MCPServer("Clustered", backend=f"redis://127.0.0.1:{nodes[0].port}/0")
    assert "is a node of a Redis Cluster" in str(wrong.value) and "redis+cluster://" in str(wrong.value)


def test_a_cluster_url_with_a_database_and_a_prefix_with_braces_are_refused_naming_why() -> None:
    with pytest.raises(ValueError, match="database 0 only"):
        RedisBackend("redis+cluster://127.0.0.1:7000/3")
    with pytest.raises(ValueError, match="must not hold"):
        RedisBackend("redis://127.0.0.1:6379/0?prefix={notes}")
