"""Several processes and no shared backend: what cannot work fails at once, saying why.

Real server processes of ``tests/servers/shared_server.py`` without ``backend=``: a legacy answer
that reaches another process than the one that asked fails the waiting call with the
sticky-sessions message (not a timeout), and a one-thread-per-process WSGI server refuses the
standalone GET stream instead of letting it take the only thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import anyio
import mcp as official
import pytest
import requests
from cluster_support import SERVERS, accept, programs, server_env
from conftest import LEGACY, server_process

from minimcp import Client, MCPError
from minimcp.client.streamable_http import streamable_http_client


class AnswersElsewhere(requests.Session):
    """Every request to ``bases[0]``, except the client's answers to server questions, to ``bases[1]``:
    what a load balancer without sticky sessions does to one of them."""

    def __init__(self, bases: Sequence[str]) -> None:
        super().__init__()
        self.home, self.elsewhere = bases
        self.diverted = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        data = kwargs.get("data")
        body = json.loads(data) if isinstance(data, (bytes, str)) and data else {}
        target = self.home
        if isinstance(body, dict) and "method" not in body and ("result" in body or "error" in body):
            target, self.diverted = self.elsewhere, self.diverted + 1
        return super().request(method, str(url).replace(self.home, target), *args, **kwargs)


def test_an_answer_refused_by_another_process_fails_the_call_at_once_naming_sticky_sessions() -> None:
    with programs(2, None) as servers:
        session = AnswersElsewhere([server.base for server in servers])
        transport = streamable_http_client(servers[0].base + "/mcp", http_client=session)
        # A read timeout far above the keepalive: a call that waited for the lost answer would fail
        # with "timed out" instead of the message checked here.
        with Client(transport, mode="legacy", elicitation_callback=accept, read_timeout_seconds=60) as client:
            with pytest.raises(MCPError) as refused:
                client.call_tool("confirm", {"door": "front"})
            assert client.call_tool("pid", {}).structured_content is not None  # the session serves on
    message = str(refused.value)
    assert "HTTP 404" in message and "sticky sessions" in message and 'backend="redis://' in message
    assert session.diverted == 1


@pytest.fixture
def sync_worker() -> Any:
    """gunicorn's default sync worker: one thread per process (``wsgi.multithread`` false)."""
    import sys

    command = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "sync", "--no-control-socket",
               "-b", "127.0.0.1:0", "shared_server:app"]
    with server_process(command, server_env(None), cwd=SERVERS) as server:
        yield server.base + "/mcp"


def test_a_single_threaded_server_refuses_the_standalone_stream_so_legacy_clients_do_not_hang(sync_worker: str) -> None:
    init = requests.post(sync_worker, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        headers={"Accept": "application/json, text/event-stream"}, timeout=30)
    stream = requests.get(sync_worker, headers={"Accept": "text/event-stream",
                                                "Mcp-Session-Id": init.headers["Mcp-Session-Id"]}, timeout=30)
    assert stream.status_code == 405 and "one thread per process" in stream.text
    with Client(sync_worker, mode="legacy", elicitation_callback=accept, read_timeout_seconds=30) as client:
        assert isinstance(client.call_tool("pid", {}).structured_content["result"], int)
        with pytest.raises(MCPError, match="no back-channel"):  # the existing refusal of questions
            client.call_tool("confirm", {"door": "front"})


def test_the_official_legacy_client_does_not_hang_on_a_single_threaded_server(sync_worker: str) -> None:
    async def main() -> list[str]:
        async with official.Client(sync_worker, mode="legacy") as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    names: list[str] = []
    runner = threading.Thread(target=lambda: names.extend(anyio.run(main)), daemon=True)
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the official legacy client hung"
    assert "confirm" in names
