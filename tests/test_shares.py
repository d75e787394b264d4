"""Fair shares over real HTTP: one principal at its full share of a resource (running calls,
outstanding questions, task workers, listens, stored tasks) is refused at once with a message
naming the limit, while another principal's request is still served at once.

The servers wait for a free worker far longer than a request may take here
(``worker_wait_timeout=600``), so a refusal that came from waiting instead of from the share
would fail the request's own timeout."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest

from conftest import legacy_handshake, modern_rpc
from minimcp.server import MCPServer
from test_legacy_faults import asking_server, open_call, rest_of_stream

WAIT = 20.0


def as_users(app: Any) -> Any:
    """What an authenticating front end does: the user named in ``X-Test-User`` arrives as ``REMOTE_USER``."""
    def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
        environ["REMOTE_USER"] = environ.get("HTTP_X_TEST_USER", "")
        return app(environ, start_response)
    return wrapped


def user(name: str) -> dict[str, str]:
    return {"X-Test-User": name}


@pytest.fixture
def background() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(8) as pool:
        yield pool


# --- running calls -----------------------------------------------------------------------------------
def holding_server(**options: Any) -> tuple[MCPServer[Any], threading.Semaphore, threading.Event]:
    mcp: MCPServer[Any] = MCPServer("shares", worker_wait_timeout=600, **options)
    inside, release = threading.Semaphore(0), threading.Event()

    @mcp.tool()
    def hold() -> str:
        inside.release()
        release.wait(WAIT)
        return "held"

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp, inside, release


def test_a_caller_at_its_share_of_calls_is_refused_at_once_while_another_is_served(
        serve_wsgi: Callable[[Any], str], background: ThreadPoolExecutor) -> None:
    mcp, inside, release = holding_server(max_workers=4, max_calls_per_principal=2)
    app = mcp.wsgi_app()
    url = serve_wsgi(as_users(app)) + app.path

    def call(name: str, who: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return modern_rpc(url, "tools/call", {"name": name, "arguments": arguments or {}}, headers=user(who))

    held = [background.submit(call, "hold", "alice") for _ in range(2)]
    for _ in held:
        assert inside.acquire(timeout=WAIT)
    refused = call("echo", "alice", {"text": "third"})
    assert refused["error"] == {"code": -32603, "message": "Too many calls running for this caller "
                                                           "(limit 2 at once); wait for one to finish"}
    assert call("echo", "bob", {"text": "bob's"})["result"]["content"][0]["text"] == "bob's"
    release.set()
    assert [future.result(WAIT)["result"]["content"][0]["text"] for future in held] == ["held", "held"]
    assert call("echo", "alice", {"text": "again"})["result"]["content"][0]["text"] == "again"


def test_anonymous_callers_are_told_apart_by_their_legacy_session(serve_http: Callable[..., str],
                                                                    background: ThreadPoolExecutor) -> None:
    mcp, inside, release = holding_server(max_workers=4, max_calls_per_principal=1)
    url = serve_http(mcp)
    first, second = legacy_handshake(url), legacy_handshake(url)
    held = background.submit(first.rpc, "tools/call", {"name": "hold", "arguments": {}})
    assert inside.acquire(timeout=WAIT)
    refused = first.rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert refused["error"]["message"] == "Too many calls running for this caller (limit 1 at once); wait for one to finish"
    assert second.call_tool("echo", {"text": "other session"})["content"][0]["text"] == "other session"
    release.set()
    assert held.result(WAIT)["result"]["content"][0]["text"] == "held"


def test_the_default_call_share_is_a_quarter_of_the_pool() -> None:
    assert MCPServer("shares", max_workers=32)._lowlevel_server.call_shares.limit == 8
    assert MCPServer("shares", max_workers=3)._lowlevel_server.call_shares.limit == 1


# --- outstanding legacy questions --------------------------------------------------------------------------
def test_unanswered_questions_stop_at_the_callers_share_and_others_still_ask(serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    url = serve_http(asking_server(outcomes, max_workers=4, max_calls_per_principal=3,
                                   max_questions_per_principal=2, worker_wait_timeout=600))
    silent = legacy_handshake(url, capabilities={"elicitation": {}})
    unanswered = [open_call(silent) for _ in range(2)]
    refused = silent.rpc("tools/call", {"name": "ask", "arguments": {}})
    assert refused["error"] == {"code": -32603, "message": "Too many questions awaiting this caller's answers "
                                                           "(limit 2); answer one first"}
    other = legacy_handshake(url, capabilities={"elicitation": {}})
    _, (event, lines) = open_call(other)
    assert other.post({"jsonrpc": "2.0", "id": event["id"], "result": {"action": "decline"}}).status_code == 202
    assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "decline"
    for _, (event, lines) in unanswered:  # answering frees the share
        silent.post({"jsonrpc": "2.0", "id": event["id"], "result": {"action": "cancel"}})
        assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "cancel"
    _, (event, lines) = open_call(silent)
    silent.post({"jsonrpc": "2.0", "id": event["id"], "result": {"action": "decline"}})
    assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "decline"


def test_the_default_question_share_is_half_the_call_share() -> None:
    low = MCPServer("shares", max_workers=32)._lowlevel_server
    assert (low.call_shares.limit, low.question_shares.limit) == (8, 4)


# --- task workers ------------------------------------------------------------------------------------------
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def tasks_server(**options: Any) -> tuple[MCPServer[Any], threading.Semaphore, threading.Event]:
    mcp: MCPServer[Any] = MCPServer("task-shares", **options)
    inside, release = threading.Semaphore(0), threading.Event()

    @mcp.tool(task=True)
    def long_job() -> str:
        inside.release()
        release.wait(WAIT)
        return "long done"

    @mcp.tool(task=True)
    def one_line(text: str) -> str:
        return text

    return mcp, inside, release


def start_task(url: str, who: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return modern_rpc(url, "tools/call", {"name": name, "arguments": arguments or {}}, capabilities=TASKS,
                      headers=user(who))


def settled(url: str, who: str, task_id: str) -> dict[str, Any]:
    """``tasks/get`` as ``who`` until the task leaves ``working`` (bounded)."""
    pause = threading.Event()
    for _ in range(int(WAIT / 0.02)):
        answer = modern_rpc(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, headers=user(who))["result"]
        if answer["status"] != "working":
            return answer  # type: ignore[no-any-return]
        pause.wait(0.02)
    raise AssertionError(f"task {task_id} still working")


def test_one_callers_long_tasks_hold_only_its_share_of_task_workers(serve_wsgi: Callable[[Any], str]) -> None:
    mcp, inside, release = tasks_server(max_task_workers=4, max_task_workers_per_principal=2)
    app = mcp.wsgi_app()
    url = serve_wsgi(as_users(app)) + app.path
    alices = [start_task(url, "alice", "long_job")["result"]["taskId"] for _ in range(5)]
    for _ in range(2):
        assert inside.acquire(timeout=WAIT)
    assert mcp.tasks.worker_shares.held("user:alice") == 2  # the other three queue behind her share
    bobs = start_task(url, "bob", "one_line", {"text": "bob's line"})["result"]["taskId"]
    assert settled(url, "bob", bobs)["result"]["content"][0]["text"] == "bob's line"
    statuses = [modern_rpc(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS,
                           headers=user("alice"))["result"]["status"] for task_id in alices]
    assert statuses == ["working"] * 5
    release.set()
    assert [settled(url, "alice", task_id)["result"]["content"][0]["text"] for task_id in alices] == ["long done"] * 5
    app.close()


def test_the_default_task_worker_share_is_a_quarter_of_the_task_workers() -> None:
    assert MCPServer("shares").tasks.worker_shares.limit == 4
    assert MCPServer("shares", max_task_workers=40).tasks.worker_shares.limit == 10
