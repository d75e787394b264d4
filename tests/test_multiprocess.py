"""A 2026-07-28 retry may land on another process: all it needs is the same keys and server name."""

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minimcp import Client, MCPError
from minimcp.types import ElicitResult

SERVER = Path(__file__).parent / "servers" / "vault_server.py"


def start(key: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MINIMCP_TEST_KEY": key,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, str(SERVER), str(port)], env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)


@pytest.fixture
def two_processes() -> Iterator[tuple[str, str, str]]:
    key = secrets.token_hex(32)
    started = [start(key), start(key), start(secrets.token_hex(32))]
    try:
        yield started[0][1], started[1][1], started[2][1]
    finally:
        for process, _ in started:
            process.terminate()
            process.wait(10)


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
