"""Any request on any process: real gunicorns sharing a real redis-server (``backend=``).

Two shapes, as users run them: N one-worker gunicorns on N ports with a client whose every request
goes to the next port (``cluster_support.RoundRobin``: the spread is deterministic), and one
``gunicorn -w 4``, whose kernel spreads the connections; every request on a new connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import mcp as official
import mcp_types as official_types
import pytest
from cluster_support import AsyncRoundRobin, RoundRobin, accept, gunicorns
from conftest import RedisServer, ServerProcess

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client

ROUNDS = 10


@pytest.fixture
def three(redis_server: RedisServer) -> Iterator[list[ServerProcess]]:
    """Three one-worker gunicorns sharing ``redis_server``."""
    with gunicorns(3, 1, redis_server.url) as servers:
        yield servers


@pytest.fixture
def four_workers(redis_server: RedisServer) -> Iterator[ServerProcess]:
    """``gunicorn -w 4`` sharing ``redis_server``."""
    with gunicorns(1, 4, redis_server.url) as (server,):
        yield server


def rotating_client(servers: list[ServerProcess], **options: Any) -> tuple[Client, RoundRobin]:
    rotating = RoundRobin([server.base for server in servers])
    return Client(streamable_http_client(servers[0].base + "/mcp", http_client=rotating), **options), rotating


def test_legacy_elicitation_with_every_request_on_the_next_process(three: list[ServerProcess]) -> None:
    client, rotating = rotating_client(three, mode="legacy", elicitation_callback=accept, read_timeout_seconds=60)
    with client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(ROUNDS)]
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]
    assert {base for base in rotating.sent} == {server.base for server in three}


def official_legacy_elicitations(url: str, transport: httpx2.AsyncBaseTransport, rounds: int) -> list[str]:
    async def on_elicit(context: Any, params: Any) -> official_types.ElicitResult:
        return official_types.ElicitResult(action="accept", content={"ok": True})

    async def main() -> list[str]:
        from mcp.client.streamable_http import streamable_http_client as official_http

        async with httpx2.AsyncClient(transport=transport, timeout=60) as http:
            async with official.Client(official_http(url, http_client=http), mode="legacy",
                                       elicitation_callback=on_elicit) as client:
                texts = []
                for n in range(rounds):
                    result = await client.call_tool("confirm", {"door": f"d{n}"})
                    texts.append(result.content[0].text)
                return texts

    return anyio.run(main)


def test_the_official_legacy_client_elicits_with_every_request_on_the_next_process(three: list[ServerProcess]) -> None:
    transport = AsyncRoundRobin([server.base for server in three])
    texts = official_legacy_elicitations(three[0].base + "/mcp", transport, ROUNDS)
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]
    assert len(set(transport.sent)) == 3


def test_legacy_elicitation_under_gunicorn_with_four_workers(four_workers: ServerProcess) -> None:
    client, _ = rotating_client([four_workers], mode="legacy", elicitation_callback=accept, read_timeout_seconds=60)
    with client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(ROUNDS)]
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]


def test_the_official_legacy_client_under_gunicorn_with_four_workers(four_workers: ServerProcess) -> None:
    transport = AsyncRoundRobin([four_workers.base])
    texts = official_legacy_elicitations(four_workers.base + "/mcp", transport, ROUNDS)
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]


def test_modern_elicitation_under_gunicorn_with_four_workers_and_no_key(four_workers: ServerProcess) -> None:
    client, _ = rotating_client([four_workers], elicitation_callback=accept)
    with client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(ROUNDS)]
        assert client.protocol_version == "2026-07-28"
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]


def test_a_worker_killed_mid_call_fails_the_call_clearly_and_the_session_lives_on(three: list[ServerProcess]) -> None:
    import os
    import signal

    from minimcp import MCPError

    told: list[str] = []

    def on_log(params: Any) -> None:
        told.append(str(params.data))
        if str(params.data).startswith("pid "):
            os.kill(int(str(params.data)[4:]), signal.SIGKILL)

    client, _ = rotating_client(three, mode="legacy", logging_callback=on_log, read_timeout_seconds=120)
    with client:
        with pytest.raises(MCPError) as failed:
            client.call_tool("hang", {"seconds": 100})
        assert "stopped before it answered" in str(failed.value)
        assert client.call_tool("pid", {}).structured_content["result"] > 0  # the session lives on
    assert told and told[0].startswith("pid ")


def test_redis_stopped_answers_503_and_restarted_serves_the_sessions_on(three: list[ServerProcess],
                                                                        redis_server: RedisServer) -> None:
    import requests
    from conftest import BASE_HEADERS, LEGACY, request_message

    client, _ = rotating_client(three, mode="legacy", elicitation_callback=accept, read_timeout_seconds=60)
    with client:
        assert client.call_tool("confirm", {"door": "before"}).content[0].text == "before: accept True"
        session_id = client.session.transport.session_id
        redis_server.stop()
        for server in three:
            down = requests.post(server.base + "/mcp", json=request_message("tools/list"), timeout=30, headers={
                **BASE_HEADERS, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY})
            assert down.status_code == 503 and down.headers["Retry-After"] == "1", down.text
            assert down.json()["error"]["message"] == "The server's shared state is unreachable; retry shortly"
        redis_server.start()
        texts = [client.call_tool("confirm", {"door": f"after{n}"}).content[0].text for n in range(3)]
    assert texts == [f"after{n}: accept True" for n in range(3)]


def test_tasks_created_on_one_process_are_polled_to_completion_on_the_others(three: list[ServerProcess]) -> None:
    client, rotating = rotating_client(three)
    with client:
        handles = [client.call_tool("add_later", {"a": n, "b": 1}, task=True) for n in range(5)]
        texts = [handle.result(timeout=60).content[0].text for handle in handles]
    assert texts == [str(n + 1) for n in range(5)]
    assert {base for base in rotating.sent} == {server.base for server in three}
