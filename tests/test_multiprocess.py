"""A 2026-07-28 retry may land on another process: all it needs is the same keys and server name."""

import contextlib
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import server_process

from minimcp import Client, MCPError
from minimcp.types import ElicitResult

SERVER = Path(__file__).parent / "servers" / "vault_server.py"


@pytest.fixture
def two_processes() -> Iterator[tuple[str, str, str]]:
    """Two vault servers sharing a key, and a stranger with a key of its own, each in its own process."""
    key = secrets.token_hex(32)
    path = os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])
    with contextlib.ExitStack() as stack:
        first, second, stranger = (
            stack.enter_context(server_process([sys.executable, str(SERVER)],
                                               {**os.environ, "MINIMCP_TEST_KEY": its_key, "PYTHONPATH": path}))
            for its_key in (key, key, secrets.token_hex(32)))
        yield first.base + "/mcp", second.base + "/mcp", stranger.base + "/mcp"


def test_a_retry_on_a_second_process_sharing_the_keys_completes(two_processes: tuple[str, str, str]) -> None:
    first, second, stranger = two_processes
    with Client(first, elicitation_callback=lambda context, params: ElicitResult(action="accept")) as client:
        round_one = client.session.call_tool("open_vault", {"door": "front"}, allow_input_required=True)
    assert round_one.result_type == "input_required"
    answers = {"elicit:0": ElicitResult(action="accept", content={"ok": True})}
    with Client(second) as client:
        done = client.call_tool("open_vault", {"door": "front"}, input_responses=answers,
                                request_state=round_one.request_state)
    assert done.content[0].text.startswith("front: accept (pid ")
    with Client(stranger) as client, pytest.raises(MCPError) as refused:
        client.call_tool("open_vault", {"door": "front"}, input_responses=answers,
                         request_state=round_one.request_state)
    assert refused.value.code == -32602 and str(refused.value) == "Invalid or expired requestState"
