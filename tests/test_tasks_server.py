"""The tasks extension on the server, over real HTTP: creation, polling, questions, cancellation,
expiry, ownership and limits. Requests are built by hand (``conftest``), so what is checked is the
wire any client sees."""

from __future__ import annotations

import contextvars
import json
import queue
import threading
import time
from typing import Annotated, Any, Callable

import pytest
import requests
from pydantic import BaseModel

from conftest import (
    BASE_HEADERS,
    LEGACY,
    legacy_handshake,
    modern_headers,
    modern_meta,
    modern_post,
    modern_rpc,
    read_messages,
    request_message,
)
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context, Elicit, Resolve
from minimcp.server.tasks import InMemoryTaskStore
from minimcp.types import CallToolResult, InputRequiredResult, TextContent

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
WITH_ELICITATION = {"elicitation": {}, **TASKS}
WAIT = 10.0


class Confirm(BaseModel):
    confirm: bool


def ask_go_ahead() -> Elicit[Confirm]:
    return Elicit("Go ahead?", Confirm)


def build(**server_options: Any) -> tuple[MCPServer[Any], dict[str, Any]]:
    """A server with the tools these tests call; ``seen`` records what the bodies observed."""
    mcp: MCPServer[Any] = MCPServer("tasks-test", **server_options)
    seen: dict[str, Any] = {"runs": 0, "release": threading.Event(), "running": threading.Event(),
                            "stopped": threading.Event()}

    @mcp.tool()
    def plain(text: str) -> str:
        return f"plain {text}"

    @mcp.tool(task=True)
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(task=True)
    def gated(ctx: Context) -> str:
        """Waits until the test releases it: proves the body outlives the creating request."""
        seen["release"].wait(WAIT)
        return "released"

    @mcp.tool(task=True)
    def endless(ctx: Context) -> str:
        seen["running"].set()
        while not ctx.cancelled:
            seen["release"].wait(0.01)
        seen["stopped"].set()
        return "stopped"

    @mcp.tool(task=True)
    def steps(ctx: Context) -> str:
        ctx.report_progress(1, 2, "halfway there")
        seen["release"].wait(WAIT)
        return "done"

    @mcp.tool(task="required")
    def must_be_task() -> str:
        return "as a task"

    @mcp.tool(task=True)
    def confirm(filename: str, ctx: Context) -> str:
        seen["runs"] += 1
        answer = ctx.elicit(f"Delete {filename}?", Confirm)
        return "deleted" if answer.action == "accept" and answer.data.confirm else "kept"

    @mcp.tool(task=True)
    def two_questions(ctx: Context) -> CallToolResult | InputRequiredResult:
        form = {"method": "elicitation/create", "params": {
            "mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}
        answers = ctx.input_responses or {}
        if not {"a", "b"} <= answers.keys():
            return InputRequiredResult(input_requests={"a": form, "b": form})
        return CallToolResult(content=[TextContent(type="text", text=f"{answers['a'].action}+{answers['b'].action}")])

    @mcp.tool(task="required")
    def resolved_first(go: Annotated[Confirm, Resolve(ask_go_ahead)]) -> str:
        return f"go={go.confirm}"

    return mcp, seen


@pytest.fixture
def served(serve_http: Callable[..., str]) -> tuple[str, MCPServer[Any], dict[str, Any]]:
    mcp, seen = build()
    return serve_http(mcp), mcp, seen


def call(url: str, name: str, arguments: dict[str, Any] | None = None, capabilities: dict[str, Any] | None = TASKS,
         **params: Any) -> dict[str, Any]:
    answer = modern_rpc(url, "tools/call", {"name": name, "arguments": arguments or {}, **params},
                        capabilities=capabilities)
    return answer


def task_rpc(url: str, method: str, task_id: str, capabilities: dict[str, Any] | None = TASKS,
             **params: Any) -> dict[str, Any]:
    return modern_rpc(url, method, {"taskId": task_id, **params}, capabilities=capabilities)


def refused(url: str, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = TASKS,
            **options: Any) -> dict[str, Any]:
    """The JSON-RPC error of a request the HTTP edge answers with a 4xx status."""
    response, _ = modern_post(url, method, params, capabilities=capabilities, **options)
    assert response.status_code == 400, (response.status_code, response.text)
    return read_messages(response)[0]["error"]  # type: ignore[no-any-return]


def poll(url: str, task_id: str, until: Callable[[dict[str, Any]], bool], capabilities: dict[str, Any] = TASKS) -> (
    dict[str, Any]
):
    """``tasks/get`` until ``until`` holds, waiting on the server between polls (bounded)."""
    stop = threading.Event()
    for _ in range(int(WAIT / 0.02)):
        answer = task_rpc(url, "tasks/get", task_id, capabilities)
        assert "result" in answer, answer
        if until(answer["result"]):
            return answer["result"]
        stop.wait(0.02)
    raise AssertionError(f"task {task_id} never reached the expected state; last: {answer}")


def terminal(result: dict[str, Any]) -> bool:
    return result["status"] in ("completed", "failed", "cancelled")


def created(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert result["resultType"] == "task", answer
    return result["taskId"]  # type: ignore[no-any-return]


# --- creation and polling ------------------------------------------------------------------------
def test_discover_advertises_the_extension_only_with_a_task_tool(serve_http: Callable[..., str]) -> None:
    mcp, _ = build()
    plain: MCPServer[Any] = MCPServer("no-tasks")

    @plain.tool()
    def echo(text: str) -> str:
        return text

    with_tasks = modern_rpc(serve_http(mcp), "server/discover")["result"]["capabilities"]
    without = modern_rpc(serve_http(plain), "server/discover")["result"]["capabilities"]
    assert with_tasks["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert "tasks" not in with_tasks
    assert "extensions" not in without


def test_a_task_is_created_flat_and_completes_with_the_result_inlined(served: Any) -> None:
    url, _, _ = served
    answer = call(url, "add", {"a": 2, "b": 3})
    result = answer["result"]
    assert result["status"] == "working"
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] > 0
    assert isinstance(result["pollIntervalMs"], int)
    assert not {"task", "result", "error", "inputRequests", "requestState", "ttl"} & result.keys()
    done = poll(url, result["taskId"], terminal)
    assert done["status"] == "completed"
    assert done["resultType"] == "complete"
    assert done["result"]["content"] == [{"type": "text", "text": "5"}]
    assert done["result"]["structuredContent"] == {"result": 5}


def test_the_body_keeps_running_after_the_creating_request_ended(served: Any) -> None:
    url, _, seen = served
    task_id = created(call(url, "gated"))
    assert task_rpc(url, "tasks/get", task_id)["result"]["status"] == "working"
    seen["release"].set()
    assert poll(url, task_id, terminal)["result"]["content"][0]["text"] == "released"


def test_progress_messages_of_the_body_become_the_status_message(served: Any) -> None:
    url, _, seen = served
    task_id = created(call(url, "steps"))
    working = poll(url, task_id, lambda r: "statusMessage" in r)
    assert working["status"] == "working" and working["statusMessage"] == "halfway there"
    seen["release"].set()
    done = poll(url, task_id, terminal)
    assert done["status"] == "completed" and "statusMessage" not in done


def test_without_the_extension_an_optional_tool_answers_directly(served: Any) -> None:
    url, _, _ = served
    result = call(url, "add", {"a": 1, "b": 1}, capabilities={})["result"]
    assert result["resultType"] == "complete" and "taskId" not in result
    assert result["content"] == [{"type": "text", "text": "2"}]


def test_without_the_extension_a_required_tool_is_refused_with_32021(served: Any) -> None:
    url, _, _ = served
    error = refused(url, "tools/call", {"name": "must_be_task", "arguments": {}}, capabilities={})
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    assert "task" in error["message"]


def test_the_extension_declared_in_meta_of_one_call_is_enough(served: Any) -> None:
    url, _, _ = served
    assert created(call(url, "must_be_task"))


def test_plain_tools_never_become_tasks_even_with_the_legacy_task_param(served: Any) -> None:
    url, _, _ = served
    result = call(url, "plain", {"text": "x"}, task={"ttl": 60000})["result"]
    assert "taskId" not in result and result["content"][0]["text"] == "plain x"


def test_invalid_arguments_answer_at_once_without_a_task(served: Any) -> None:
    url, _, _ = served
    result = call(url, "add", {"a": "not a number", "b": 1})["result"]
    assert result["isError"] is True and "taskId" not in result


# --- the tasks/* methods -------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_task_methods_need_the_extension(served: Any, method: str) -> None:
    url, _, _ = served
    task_id = created(call(url, "add", {"a": 1, "b": 2}))
    error = refused(url, method, {"taskId": task_id, "inputResponses": {}}, capabilities={})
    assert error["code"] == -32021


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_an_unknown_task_id_is_32602(served: Any, method: str) -> None:
    url, _, _ = served
    error = task_rpc(url, method, "no-such-task", inputResponses={})["error"]
    assert error == {"code": -32602, "message": "Failed to retrieve task: Task not found"}


def test_removed_v1_methods_are_not_found(served: Any) -> None:
    url, _, _ = served
    for method in ("tasks/result", "tasks/list"):
        response, _ = modern_post(url, method, {"taskId": "x"}, capabilities=TASKS)
        assert read_messages(response)[0]["error"]["code"] == -32601


def test_mcp_name_must_repeat_the_task_id(served: Any) -> None:
    url, _, _ = served
    task_id = created(call(url, "add", {"a": 1, "b": 2}))
    response, _ = modern_post(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS,
                              headers={"Mcp-Name": "another-task"})
    assert response.status_code == 400
    assert read_messages(response)[0]["error"]["code"] == -32020


def test_a_non_string_task_id_is_32602(served: Any) -> None:
    url, _, _ = served
    session = legacy_handshake(url, LEGACY, capabilities=TASKS)  # no Mcp-Name check on the legacy wire
    assert session.rpc("tasks/get", {"taskId": 7})["error"]["code"] == -32602
    assert session.rpc("tasks/update", {"taskId": "x"})["error"]["code"] == -32602


# --- cancellation --------------------------------------------------------------------------------
def test_cancel_acks_empty_settles_cancelled_and_reaches_the_body(served: Any) -> None:
    url, _, seen = served
    task_id = created(call(url, "endless"))
    assert seen["running"].wait(WAIT)  # a task cancelled before its body starts never runs it
    ack = task_rpc(url, "tasks/cancel", task_id)["result"]
    assert ack["resultType"] == "complete"
    assert not {"taskId", "status", "result", "error", "inputRequests"} & ack.keys()
    assert seen["stopped"].wait(WAIT), "ctx.cancelled never became true in the body"
    final = task_rpc(url, "tasks/get", task_id)["result"]
    assert final["status"] == "cancelled" and "result" not in final


def test_cancel_of_a_finished_task_is_the_same_ack_and_changes_nothing(served: Any) -> None:
    url, _, _ = served
    task_id = created(call(url, "add", {"a": 1, "b": 2}))
    poll(url, task_id, terminal)
    assert task_rpc(url, "tasks/cancel", task_id)["result"]["resultType"] == "complete"
    assert task_rpc(url, "tasks/get", task_id)["result"]["status"] == "completed"


# --- questions inside a task -----------------------------------------------------------------------
def test_a_question_in_the_body_parks_the_task_and_tasks_update_resumes_it(served: Any) -> None:
    url, _, seen = served
    task_id = created(call(url, "confirm", {"filename": "a.txt"}, capabilities=WITH_ELICITATION))
    waiting = poll(url, task_id, lambda r: r["status"] == "input_required")
    [(key, request)] = waiting["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Delete a.txt?"
    ack = task_rpc(url, "tasks/update", task_id, capabilities=WITH_ELICITATION,
                   inputResponses={key: {"action": "accept", "content": {"confirm": True}}})["result"]
    assert ack["resultType"] == "complete" and "status" not in ack
    done = poll(url, task_id, terminal, WITH_ELICITATION)
    assert done["result"]["content"][0]["text"] == "deleted"
    assert seen["runs"] == 2  # the body ran again from the top, and the question returned its answer


def test_a_question_needs_the_clients_elicitation_capability(served: Any) -> None:
    url, _, _ = served
    task_id = created(call(url, "confirm", {"filename": "a.txt"}))
    failed = poll(url, task_id, terminal)
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == -32600 and "result" not in failed


def test_answers_may_come_one_at_a_time_and_unknown_keys_are_ignored(served: Any) -> None:
    url, _, _ = served
    task_id = created(call(url, "two_questions", capabilities=WITH_ELICITATION))
    poll(url, task_id, lambda r: r["status"] == "input_required")
    accept = {"action": "accept", "content": {}}
    task_rpc(url, "tasks/update", task_id, inputResponses={"a": accept, "never-asked": {"x": 1}})
    after_one = task_rpc(url, "tasks/get", task_id)["result"]
    assert after_one["status"] == "input_required" and list(after_one["inputRequests"]) == ["b"]
    task_rpc(url, "tasks/update", task_id, inputResponses={"b": {"action": "decline"}})
    assert poll(url, task_id, terminal)["result"]["content"][0]["text"] == "accept+decline"


def test_an_answer_of_the_wrong_shape_is_32602_and_the_task_keeps_waiting(served: Any) -> None:
    url, _, _ = served
    task_id = created(call(url, "confirm", {"filename": "b"}, capabilities=WITH_ELICITATION))
    key = next(iter(poll(url, task_id, lambda r: r["status"] == "input_required")["inputRequests"]))
    error = task_rpc(url, "tasks/update", task_id, inputResponses={key: {"action": "maybe"}})["error"]
    assert error["code"] == -32602 and key in error["message"]
    assert task_rpc(url, "tasks/get", task_id)["result"]["status"] == "input_required"
    bad_shape = task_rpc(url, "tasks/update", task_id, inputResponses=[1, 2])["error"]
    assert bad_shape["code"] == -32602


def test_resolvers_are_settled_in_rounds_before_the_task_exists(served: Any) -> None:
    url, _, _ = served
    first = call(url, "resolved_first", capabilities=WITH_ELICITATION)["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    [key] = first["inputRequests"]
    second = call(url, "resolved_first", capabilities=WITH_ELICITATION, requestState=first["requestState"],
                  inputResponses={key: {"action": "accept", "content": {"confirm": True}}})
    task_id = created(second)
    assert "requestState" not in second["result"]
    assert poll(url, task_id, terminal)["result"]["content"][0]["text"] == "go=True"


def test_a_legacy_session_that_declared_the_extension_gets_tasks(served: Any) -> None:
    url, _, _ = served
    session = legacy_handshake(url, LEGACY, capabilities=TASKS)
    result = session.call_tool("add", {"a": 4, "b": 4})
    assert result["resultType"] == "task"
    for _ in range(int(WAIT / 0.02)):
        state = session.rpc("tasks/get", {"taskId": result["taskId"]})["result"]
        if state["status"] == "completed":
            break
        threading.Event().wait(0.02)
    assert state["result"]["content"][0]["text"] == "8"


# --- ownership, expiry, limits ---------------------------------------------------------------------
def _as_user(app: Any) -> Any:
    """What an authenticating front end does: the principal arrives as ``REMOTE_USER``."""
    def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
        environ["REMOTE_USER"] = environ.get("HTTP_X_TEST_USER", "")
        return app(environ, start_response)
    return wrapped


def test_one_principal_cannot_see_or_touch_anothers_task(serve_wsgi: Callable[[Any], str]) -> None:
    mcp, seen = build()
    app = mcp.wsgi_app()
    url = serve_wsgi(_as_user(app)) + app.path
    alice, bob = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    answer = modern_rpc(url, "tools/call", {"name": "endless", "arguments": {}}, capabilities=TASKS, headers=alice)
    task_id = created(answer)
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        error = modern_rpc(url, method, {"taskId": task_id, "inputResponses": {}}, capabilities=TASKS,
                           headers=bob)["error"]
        assert error == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    assert not seen["stopped"].is_set()
    own = modern_rpc(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, headers=alice)["result"]
    assert own["status"] == "working"
    assert seen["running"].wait(WAIT)  # a task cancelled before its body starts never runs it
    modern_rpc(url, "tasks/cancel", {"taskId": task_id}, capabilities=TASKS, headers=alice)
    assert seen["stopped"].wait(WAIT)
    app.close()


def test_the_stored_task_cap_is_per_principal_and_finished_tasks_count(serve_wsgi: Callable[[Any], str]) -> None:
    mcp, seen = build(task_store=InMemoryTaskStore(max_tasks_per_owner=2))
    app = mcp.wsgi_app()
    url = serve_wsgi(_as_user(app)) + app.path

    def start(user: str) -> dict[str, Any]:
        return modern_rpc(url, "tools/call", {"name": "gated", "arguments": {}}, capabilities=TASKS,
                          headers={"X-Test-User": user})

    first, second = created(start("alice")), created(start("alice"))
    refused = start("alice")["error"]
    assert refused == {"code": -32603, "message": "Too many tasks kept for this caller (limit 2; finished ones "
                                                  "count until they expire); try again when some have expired"}
    assert created(start("bob"))
    modern_rpc(url, "tasks/cancel", {"taskId": first}, capabilities=TASKS, headers={"X-Test-User": "alice"})
    assert start("alice")["error"] == refused, "a finished task keeps its place until it expires"
    seen["release"].set()
    poll_headers = {"X-Test-User": "alice"}
    assert modern_rpc(url, "tasks/get", {"taskId": second}, capabilities=TASKS, headers=poll_headers)["result"]
    app.close()


def test_a_queued_body_runs_in_its_own_callers_context(serve_wsgi: Callable[[Any], str]) -> None:
    """Bodies queued for one worker each see their own caller's context variables and principal,
    never those of the body the worker ran before."""
    caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="nobody")

    def remember(ctx: Any, call_next: Any) -> Any:
        caller.set(f"{ctx.transport.principal} via middleware")
        return call_next(ctx)

    mcp, seen = build(middleware=[remember], max_task_workers=1)

    @mcp.tool(task=True)
    def who(hold: bool, ctx: Context) -> str:
        if hold:
            seen["release"].wait(WAIT)
        return f"{caller.get()}, principal {ctx.request_context.transport.principal}"

    app = mcp.wsgi_app()
    url = serve_wsgi(_as_user(app)) + app.path

    def start(user: str, hold: bool) -> str:
        return created(modern_rpc(url, "tools/call", {"name": "who", "arguments": {"hold": hold}}, capabilities=TASKS,
                                  headers={"X-Test-User": user}))

    started = [("alice", start("alice", True)), ("bob", start("bob", False)), ("carol", start("carol", False))]
    seen["release"].set()
    for user, task_id in started:
        done = poll_as(url, task_id, user)
        assert done["result"]["content"][0]["text"] == f"{user} via middleware, principal {user}", done
    app.close()


def poll_as(url: str, task_id: str, user: str) -> dict[str, Any]:
    """``tasks/get`` as ``user`` until the task is no longer working (bounded)."""
    pause = threading.Event()
    for _ in range(int(WAIT / 0.02)):
        answer = modern_rpc(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, headers={"X-Test-User": user})
        if answer["result"]["status"] != "working":
            return answer["result"]  # type: ignore[no-any-return]
        pause.wait(0.02)
    raise AssertionError(f"task {task_id} still working")


def test_an_expired_task_says_so_to_its_owner_only(serve_wsgi: Callable[[Any], str]) -> None:
    ahead = [0.0]
    mcp, _ = build(task_store=InMemoryTaskStore(clock=lambda: time.time() + ahead[0]))
    mcp.tasks.ttl = 60.0
    app = mcp.wsgi_app()
    url = serve_wsgi(_as_user(app)) + app.path
    alice, bob = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    task_id = created(modern_rpc(url, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}},
                                 capabilities=TASKS, headers=alice))
    ahead[0] = 120.0  # the store's clock passes the 60 s TTL
    for method in ("tasks/get", "tasks/cancel"):
        mine = modern_rpc(url, method, {"taskId": task_id}, capabilities=TASKS, headers=alice)["error"]
        assert mine == {"code": -32602, "message": "Failed to retrieve task: Task has expired"}
        theirs = modern_rpc(url, method, {"taskId": task_id}, capabilities=TASKS, headers=bob)["error"]
        assert theirs == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    app.close()


def test_a_running_body_sees_cancelled_once_its_ttl_passes(serve_http: Callable[..., str]) -> None:
    mcp, seen = build()
    mcp.tasks.ttl = 0.2
    url = serve_http(mcp)
    created(call(url, "endless"))
    assert seen["stopped"].wait(WAIT), "the body never saw ctx.cancelled after its TTL"


def test_bodies_past_max_running_wait_their_turn_in_working(serve_http: Callable[..., str]) -> None:
    mcp, seen = build()
    mcp.tasks.max_running = 1
    url = serve_http(mcp)
    first, second, third = (created(call(url, "gated")) for _ in range(3))
    assert [task_rpc(url, "tasks/get", t)["result"]["status"] for t in (first, second, third)] == ["working"] * 3
    seen["release"].set()
    for task_id in (first, second, third):
        assert poll(url, task_id, terminal)["result"]["content"][0]["text"] == "released"


def test_the_store_refuses_past_its_total_bound(serve_http: Callable[..., str]) -> None:
    mcp, seen = build(task_store=InMemoryTaskStore(max_tasks=1))
    url = serve_http(mcp)
    created(call(url, "add", {"a": 1, "b": 1}))
    error = call(url, "add", {"a": 1, "b": 1})["error"]
    assert "maximum of 1 tasks" in error["message"]


def test_a_task_body_failure_is_failed_with_the_json_rpc_error(serve_http: Callable[..., str]) -> None:
    mcp: MCPServer[Any] = MCPServer("failing")

    @mcp.tool(task=True)
    def broken() -> str:
        from minimcp import MCPError
        raise MCPError(-32603, "backend unreachable")

    @mcp.tool(task=True)
    def tool_error() -> str:
        raise ValueError("bad input")

    url = serve_http(mcp)
    failed = poll(url, created(call(url, "broken")), terminal)
    assert failed["status"] == "failed" and failed["error"] == {"code": -32603, "message": "backend unreachable"}
    completed = poll(url, created(call(url, "tool_error")), terminal)
    assert completed["status"] == "completed" and completed["result"]["isError"] is True


def test_legacy_call_without_the_extension_in_initialize_runs_directly(serve_http: Callable[..., str]) -> None:
    mcp, _ = build()
    url = serve_http(mcp)
    session = legacy_handshake(url, LEGACY)
    assert session.call_tool("add", {"a": 2, "b": 2})["content"][0]["text"] == "4"
    message = request_message("tools/call", {"name": "must_be_task", "arguments": {}})
    answer = read_messages(session.post(message))[0]
    assert answer["error"]["code"] == -32021


# --- status notifications (subscriptions/listen with taskIds) ----------------------------------------
class Listen:
    """An open ``subscriptions/listen`` stream whose frames a background thread collects."""

    def __init__(self, url: str, notifications: dict[str, Any], capabilities: dict[str, Any] = TASKS,
                 headers: dict[str, str] | None = None) -> None:
        message = request_message("subscriptions/listen",
                                  {"notifications": notifications, "_meta": modern_meta(capabilities)})
        self.response = requests.post(url, json=message, stream=True, timeout=WAIT, headers={
            **BASE_HEADERS, **modern_headers("subscriptions/listen"), **(headers or {})})
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            if not self.response.headers.get("Content-Type", "").startswith("text/event-stream"):
                self.frames.put(self.response.json())  # refused: one JSON answer
                return
            for line in self.response.iter_lines(decode_unicode=True):
                if line and line.startswith("data:") and line[5:].strip():
                    self.frames.put(json.loads(line[5:]))
        except (requests.RequestException, AttributeError, ValueError):
            return

    def next(self) -> dict[str, Any]:
        return self.frames.get(timeout=WAIT)

    def close(self) -> None:
        self.response.close()


def test_a_listen_on_task_ids_hears_each_status_with_the_result_inlined(serve_wsgi: Callable[[Any], str]) -> None:
    mcp, seen = build()
    app = mcp.wsgi_app()
    url = serve_wsgi(_as_user(app)) + app.path
    alice, bob = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    mine = created(modern_rpc(url, "tools/call", {"name": "gated", "arguments": {}}, capabilities=TASKS,
                              headers=alice))
    theirs = created(modern_rpc(url, "tools/call", {"name": "gated", "arguments": {}}, capabilities=TASKS,
                                headers=bob))
    listen = Listen(url, {"taskIds": [mine, theirs, "unknown"]}, headers=alice)
    try:
        ack = listen.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"taskIds": [mine]}
        seen["release"].set()
        update = listen.next()
        assert update["method"] == "notifications/tasks"
        assert update["params"]["taskId"] == mine and update["params"]["status"] == "completed"
        assert update["params"]["result"]["content"][0]["text"] == "released"
        assert "resultType" not in update["params"]
        poll_bob = modern_rpc(url, "tasks/get", {"taskId": theirs}, capabilities=TASKS, headers=bob)["result"]
        assert poll_bob["taskId"] == theirs
        assert listen.frames.empty(), "another principal's task was announced"
    finally:
        listen.close()
        app.close()


def test_a_listen_on_task_ids_needs_the_extension(served: Any) -> None:
    url, _, _ = served
    listen = Listen(url, {"taskIds": ["x"]}, capabilities={})
    try:
        assert listen.next()["error"]["code"] == -32021
    finally:
        listen.close()
