"""A 2026-07-28 retry may land on another process: all it needs is the same keys and server name."""

import os
import queue
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from minimcp import Client, MCPError
from minimcp.types import ElicitResult

SERVER = Path(__file__).parent / "servers" / "vault_server.py"


#: How long a server process may take to import, build its server and listen (a loaded machine is slow).
STARTUP = 60.0


def start(key: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start a vault server; it binds a port of the system's choosing and prints it once listening."""
    env = {**os.environ, "MINIMCP_TEST_KEY": key,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, str(SERVER)], env=env, stdout=subprocess.PIPE, stderr=stderr)
    assert process.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()
    try:
        port = int(lines.get(timeout=STARTUP))
    except (queue.Empty, ValueError):
        process.kill()
        process.wait(10)
        raise AssertionError(f"the vault server did not listen within {STARTUP:.0f}s: {log.read_text()}") from None
    return process, f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def two_processes(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    key = secrets.token_hex(32)
    started: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        for name, its_key in (("first", key), ("second", key), ("stranger", secrets.token_hex(32))):
            started.append(start(its_key, tmp_path / f"{name}.log"))
        yield started[0][1], started[1][1], started[2][1]
    finally:
        for process, _ in started:
            process.terminate()
            process.wait(10)
            assert process.stdout is not None
            process.stdout.close()


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
