"""Fair shares over real HTTP: one principal at its full share of a resource (running calls,
outstanding questions, task workers, listens, stored tasks) is refused at once with a message
naming the limit, while another principal's request is still served at once.

The servers wait for a free worker far longer than a request may take here
(``worker_wait_timeout=600``), so a refusal that came from waiting instead of from the share
would fail the request's own timeout."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest
import requests

from conftest import (
    BASE_HEADERS,
    TIMEOUT,
    legacy_handshake,
    modern_headers,
    modern_params,
    modern_rpc,
    request_message,
    wait_for,
)
from minimcp.server import MCPServer
from minimcp.server.tasks import InMemoryTaskStore
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


# --- stored tasks ------------------------------------------------------------------------------------------
def test_quick_tasks_count_against_their_callers_share_until_they_expire(serve_wsgi: Callable[[Any], str]) -> None:
    mcp, _, _ = tasks_server(task_store=InMemoryTaskStore(max_tasks=10, max_tasks_per_owner=3))
    app = mcp.wsgi_app()
    url = serve_wsgi(as_users(app)) + app.path
    done = [start_task(url, "alice", "one_line", {"text": str(n)})["result"]["taskId"] for n in range(3)]
    assert [settled(url, "alice", task_id)["status"] for task_id in done] == ["completed"] * 3
    refused = start_task(url, "alice", "one_line", {"text": "fourth"})
    assert refused["error"] == {"code": -32603, "message": "Too many tasks kept for this caller (limit 3; finished "
                                                           "ones count until they expire); try again when some have "
                                                           "expired"}
    bobs = start_task(url, "bob", "one_line", {"text": "bob's"})["result"]["taskId"]
    assert settled(url, "bob", bobs)["result"]["content"][0]["text"] == "bob's"
    app.close()


def test_an_anonymous_callers_task_belongs_to_its_legacy_session(serve_http: Callable[..., str]) -> None:
    mcp, _, _ = tasks_server()
    url = serve_http(mcp)
    owner, stranger = legacy_handshake(url, capabilities=TASKS), legacy_handshake(url, capabilities=TASKS)
    task_id = owner.call_tool("one_line", {"text": "mine"})["taskId"]
    assert stranger.rpc("tasks/get", {"taskId": task_id})["error"] == {
        "code": -32602, "message": "Failed to retrieve task: Task not found"}
    assert owner.rpc("tasks/get", {"taskId": task_id})["result"]["taskId"] == task_id


# --- listens -----------------------------------------------------------------------------------------------
class Listening:
    """One ``subscriptions/listen`` POSTed as ``who``, its stream kept open and read line by line."""

    def __init__(self, url: str, who: str) -> None:
        params = {"notifications": {"toolsListChanged": True}}
        message = request_message("subscriptions/listen", modern_params(params))
        self.response = requests.post(url, data=json.dumps(message), stream=True, timeout=TIMEOUT,
                                      headers={**BASE_HEADERS, **modern_headers("subscriptions/listen"), **user(who)})
        self._lines = self.response.iter_lines()  # one iterator for the stream's life: dropping one ends it

    def first(self) -> dict[str, Any]:
        """The answer's first message: a JSON body (a refusal), or the stream's first event."""
        if self.response.headers.get("Content-Type", "").startswith("application/json"):
            return self.response.json()  # type: ignore[no-any-return]
        for line in self._lines:
            if line.startswith(b"data:") and line[5:].strip():
                return json.loads(line[5:])  # type: ignore[no-any-return]
        raise AssertionError("the stream ended without an event")

    def close(self) -> None:
        self.response.close()


ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


def test_a_caller_at_its_share_of_listens_is_refused_while_another_listens(serve_wsgi: Callable[[Any], str]) -> None:
    mcp: MCPServer[Any] = MCPServer("listen-shares", max_listens_per_principal=2)
    app = mcp.wsgi_app(keepalive_interval=0.05)
    url = serve_wsgi(as_users(app)) + app.path
    held = [Listening(url, "alice") for _ in range(2)]
    assert [stream.first()["method"] for stream in held] == [ACKNOWLEDGED] * 2
    refused = Listening(url, "alice").first()
    assert refused["error"] == {"code": -32603, "message": "Too many open subscriptions for this caller (limit 2); "
                                                           "close one first"}
    bobs = Listening(url, "bob")
    assert bobs.first()["method"] == ACKNOWLEDGED
    held.pop().close()  # the server sees the stream end at its next keepalive and frees the place
    assert wait_for(lambda: mcp.dispatcher.listens.shares.held("user:alice") == 1, WAIT)
    again = Listening(url, "alice")
    assert again.first()["method"] == ACKNOWLEDGED
    for stream in (*held, bobs, again):
        stream.close()
    app.close()


def test_the_default_listen_share_is_a_sixteenth_of_the_servers_bound() -> None:
    assert MCPServer("shares").dispatcher.listens.shares.limit == 64
