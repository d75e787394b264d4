"""A shared backend named by a ``redis+sentinel://`` URL, on real Redis processes started by the test:
a master, its replica and two Sentinels watching them on loopback ports.

The server finds the master through the Sentinels and serves legacy elicitation on it; after a
failover (``SENTINEL FAILOVER``) it finds the new master and the same session goes on. A service
no Sentinel watches stops the server where it is built, naming it.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import wait_for
from pydantic import BaseModel
from redis_support import SERVICE, SentinelGroup, sentinel_group

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.backends import BackendMisconfigured
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult


class Ok(BaseModel):
    ok: bool


@pytest.fixture
def group() -> Iterator[SentinelGroup]:
    with tempfile.TemporaryDirectory(prefix="minimcp-sentinel-", dir="/tmp") as directory, \
            sentinel_group(Path(directory)) as started:
        yield started


def build(backend: str) -> MCPServer:
    mcp = MCPServer("Watched", backend=backend)

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"

    return mcp


def agree(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


def master_port(group: SentinelGroup) -> int:
    with contextlib.closing(group.sentinels[0].client()) as sentinel:
        return int(sentinel.sentinel_get_master_addr_by_name(SERVICE)[1])


@pytest.mark.parametrize("scheme", ["redis+sentinel", "sentinel"])
def test_a_server_finds_the_master_through_the_sentinels_and_serves_elicitation(
        group: SentinelGroup, serve_http: Callable[..., str], scheme: str) -> None:
    mcp = build(group.url(scheme, "/0?prefix=watched"))
    assert repr(mcp.backend).startswith(f"RedisBackend('redis+sentinel://127.0.0.1:{group.sentinels[0].port},")
    with Client(streamable_http_client(serve_http(mcp)), mode="legacy", elicitation_callback=agree) as client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(2)]
    assert texts == ["d0: accept True", "d1: accept True"]
    with contextlib.closing(group.master.client()) as master:
        assert master.llen("watched:rs:keys") > 0  # its data is on the master
    mcp.close()
    mcp.backend.close()


def test_after_a_failover_the_same_session_goes_on_with_the_new_master(
        group: SentinelGroup, serve_http: Callable[..., str]) -> None:
    mcp = build(group.url())
    transport = streamable_http_client(serve_http(mcp))
    with Client(transport, mode="legacy", elicitation_callback=agree) as client:
        assert client.call_tool("confirm", {"door": "before"}).content[0].text == "before: accept True"
        with contextlib.closing(group.replica.client()) as replica:  # the session reached the replica
            assert wait_for(lambda: any(True for _ in replica.scan_iter("minimcp:Watched:s:*")), 10.0)
        with contextlib.closing(group.sentinels[0].client()) as sentinel:
            sentinel.execute_command("SENTINEL", "FAILOVER", SERVICE)
        assert wait_for(lambda: master_port(group) == group.replica.port, 30.0), "the failover did not happen"
        assert client.call_tool("confirm", {"door": "after"}).content[0].text == "after: accept True"
    with contextlib.closing(group.replica.client()) as promoted:
        assert promoted.info("replication")["role"] == "master"
    mcp.close()
    mcp.backend.close()


def test_a_service_no_sentinel_watches_stops_the_server_naming_it(group: SentinelGroup) -> None:
    with pytest.raises(BackendMisconfigured) as wrong:
        MCPServer("Watched", backend=group.url().replace(f"/{SERVICE}", "/nosuch"))
    message = str(wrong.value)
    assert "watch no master named 'nosuch'" in message and "sentinel monitor" in message, message


def test_a_sentinel_url_without_a_service_is_refused_naming_the_form() -> None:
    with pytest.raises(ValueError, match="give the service's name"):
        MCPServer("Watched", backend="redis+sentinel://127.0.0.1:26379")
