"""Failures noticed fast: a real ``gunicorn -w 2`` on a real redis-server, whose workers are killed,
reloaded and stopped while they hold a legacy question, a task or a GET stream.

- a worker killed with ``SIGKILL`` (no chance to say anything): its legacy question and its task
  fail within 3 s, through the heartbeat it stopped beating (TTL 2 s, read every 0.5 s);
- a worker stopped gracefully (``HUP``, ``TERM``): each question it holds fails with an error that
  says so, before it exits; a gthread worker holding a GET stream exits at its graceful timeout.

The measured times are printed (``pytest -s``) for the report; the bounds keep a margin for a
loaded two-core machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import requests
from cluster_support import SERVERS, client_of, server_env, worker_command
from conftest import BASE_HEADERS, RedisServer, ServerProcess, legacy_handshake, request_message, server_process
from test_gunicorn_worker import watch

from minimcp import Client, MCPError
from minimcp.client.streamable_http import streamable_http_client
from minimcp.types import ElicitResult

#: A killed worker's call and task must fail within this (3 s and a margin for a loaded machine).
KILL_BOUND = 4.5
_PID = re.compile(r"pid (\d+)")


@pytest.fixture
def two_workers(redis_server: RedisServer) -> Iterator[tuple[ServerProcess, set[int]]]:
    with server_process(worker_command(2, "--graceful-timeout", "4"), server_env(redis_server.url),
                        cwd=SERVERS) as server:
        yield server, watch(server, 2)


class Asked:
    """An elicitation callback that does ``act(pid)`` to the process asking, once, and answers
    after it; when it acted is ``at``."""

    def __init__(self, act: Any) -> None:
        self.act = act
        self.at: float | None = None

    def __call__(self, context: Any, params: Any) -> ElicitResult:
        if self.at is None:
            found = _PID.search(params.message)
            assert found is not None, params.message
            self.act(int(found.group(1)))
            self.at = time.monotonic()
        return ElicitResult(action="accept", content={"ok": True})


def failed_call(server: ServerProcess, asked: Asked) -> tuple[MCPError, float]:
    """Call ``confirm_here`` as a legacy client answering through ``asked``: the error it fails with
    and the seconds from ``asked``'s act to the failure."""
    client, _ = client_of(server, mode="legacy", elicitation_callback=asked, read_timeout_seconds=60)
    with client:
        with pytest.raises(MCPError) as failed:
            client.call_tool("confirm_here", {"door": "front"})
        took = time.monotonic() - (asked.at or 0.0)
        assert client.call_tool("pid", {}).structured_content["result"] > 0  # the session lives on
    return failed.value, took


def test_a_killed_worker_fails_its_legacy_question_within_3_s(two_workers: tuple[ServerProcess, set[int]]) -> None:
    server, workers = two_workers
    asked = Asked(lambda pid: os.kill(pid, signal.SIGKILL))
    error, took = failed_call(server, asked)
    print(f"\nkill -9 of the worker holding a legacy question: the call failed after {took:.2f}s")
    assert "stopped before it answered" in str(error) and "call again" in str(error)
    assert took < KILL_BOUND


def test_a_killed_worker_fails_its_task_within_3_s(two_workers: tuple[ServerProcess, set[int]],
                                                   redis_server: RedisServer) -> None:
    server, _ = two_workers
    tag = f"started-{time.monotonic_ns()}"
    with Client(server.base + "/mcp") as client:
        handle = client.call_tool("endless_task", {"tag": tag}, task=True)
        found = redis.Redis.from_url(redis_server.url).blpop([tag], timeout=30)
        assert found is not None
        os.kill(int(found[1]), signal.SIGKILL)
        killed = time.monotonic()
        with pytest.raises(MCPError) as failed:
            handle.result(timeout=30)
        took = time.monotonic() - killed
    print(f"\nkill -9 of the worker running a task: the task failed after {took:.2f}s")
    assert "stopped (no heartbeat within 2 s)" in str(failed.value)
    assert took < KILL_BOUND


@pytest.mark.parametrize("signal_to", ["HUP master", "TERM worker"])
def test_a_stopping_worker_answers_its_question_with_an_error_before_it_exits(
        two_workers: tuple[ServerProcess, set[int]], signal_to: str) -> None:
    """``HUP`` to the master replaces both workers (each gets ``TERM``); ``TERM`` to one worker
    stops that one. A client that does not answer: its question fails with the stopping error 2 s
    before the 4 s graceful timeout ends, on the call's own stream, and the worker exits after."""
    server, _ = two_workers
    session = legacy_handshake(server.base + "/mcp", capabilities={"elicitation": {}})
    message = request_message("tools/call", {"name": "confirm_here", "arguments": {"door": "front"}})
    response = requests.post(session.url, data=json.dumps(message), stream=True, timeout=30, headers={
        **BASE_HEADERS, "Mcp-Session-Id": session.session_id, "MCP-Protocol-Version": session.protocol_version})
    lines = response.iter_lines()
    asked = next(event for event in _events(lines) if event.get("method") == "elicitation/create")
    found = _PID.search(asked["params"]["message"])
    assert found is not None
    pid = int(found.group(1))
    if signal_to == "HUP master":
        server.process.send_signal(signal.SIGHUP)
    else:
        os.kill(pid, signal.SIGTERM)
    sent = time.monotonic()
    final = list(_events(lines))[-1]
    took = time.monotonic() - sent
    print(f"\n{signal_to} with a legacy question held: the call failed after {took:.2f}s")
    assert final["id"] == message["id"], final
    assert final["error"]["message"].startswith("The server process running this call is stopping"), final
    assert "call again" in final["error"]["message"]
    assert took < 4.0  # within the graceful timeout: before the worker's exit, not after a heartbeat expired
    assert _gone_within(pid, 10.0)


def _events(lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith(b"data:") and line[5:].strip():
            yield json.loads(line[5:])


def _gone_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` (a child of the master, reaped by it) is gone within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def gthread_command(grace: int) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "gthread", "--threads", "8", "--no-control-socket",
            "--graceful-timeout", str(grace), "-b", "127.0.0.1:0", "shared_server:app"]


def test_a_gthread_worker_holding_a_get_stream_exits_at_its_graceful_timeout(redis_server: RedisServer) -> None:
    """gthread joins its request threads at exit: a GET stream held them past the graceful timeout
    (until ``--timeout`` killed the worker); now the process stops serving once its main thread ends."""
    grace = 2
    with server_process(gthread_command(grace), server_env(redis_server.url), cwd=SERVERS) as server:
        (worker,) = watch(server, 1)
        client = Client(streamable_http_client(server.base + "/mcp"), mode="legacy", read_timeout_seconds=60)
        with client:
            assert client.call_tool("pid", {}).structured_content["result"] == worker
            assert _get_stream_open(server, client)
            server.process.send_signal(signal.SIGHUP)
            sent = time.monotonic()
            assert _gone_within(worker, grace + 8.0)
            took = time.monotonic() - sent
    print(f"\ngthread worker holding a GET stream: exited {took:.2f}s after HUP (graceful timeout {grace}s)")
    assert took < grace + 2.5  # gthread notices the signal within its 1 s poll, then waits the timeout


def test_a_gthread_worker_answers_its_question_with_an_error_as_it_exits(redis_server: RedisServer) -> None:
    """gthread gives the app no word of a stop until its interpreter exits, after the graceful
    timeout: the question held fails then, on its call's stream, before the process is gone."""
    grace = 2
    with server_process(gthread_command(grace), server_env(redis_server.url), cwd=SERVERS) as server:
        (worker,) = watch(server, 1)
        session = legacy_handshake(server.base + "/mcp", capabilities={"elicitation": {}})
        message = request_message("tools/call", {"name": "confirm_here", "arguments": {"door": "back"}})
        response = requests.post(session.url, data=json.dumps(message), stream=True, timeout=30, headers={
            **BASE_HEADERS, "Mcp-Session-Id": session.session_id, "MCP-Protocol-Version": session.protocol_version})
        lines = response.iter_lines()
        assert any(event.get("method") == "elicitation/create" for event in _events(lines))
        server.process.send_signal(signal.SIGHUP)
        sent = time.monotonic()
        final = list(_events(lines))[-1]
        took = time.monotonic() - sent
        assert _gone_within(worker, 10.0)
    print(f"\ngthread worker holding a legacy question: the call failed {took:.2f}s after HUP (graceful timeout {grace}s)")
    assert final["id"] == message["id"], final
    assert final["error"]["message"].startswith("The server process running this call is stopping"), final
    assert took < grace + 2.5


def _get_stream_open(server: ServerProcess, client: Client) -> bool:
    """Whether a GET stream of ``client``'s session is open on the server (a second one is refused 409)."""
    session_id = client.session.transport.session_id
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        second = requests.get(server.base + "/mcp", timeout=5, stream=True, headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
        status = second.status_code
        second.close()
        if status == 409:
            return True
        threading.Event().wait(0.1)
    return False
