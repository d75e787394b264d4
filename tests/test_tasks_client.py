"""The client side of the tasks extension against minimcp's own server over real HTTP:
``call_tool(..., task=True)`` handles, transparent tasks behind a plain ``call_tool``, a task's
questions answered by the same ``elicitation_callback``, cancellation and bounded waits."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from minimcp import Client, MCPError, TaskCancelledError, TaskHandle
from minimcp.client import ClientRequestContext
from minimcp.shared.tasks import GetTaskResult
from minimcp.types import REQUEST_TIMEOUT, ElicitResult
from test_tasks_server import WAIT, build


@pytest.fixture
def served(serve_http: Callable[..., str]) -> tuple[str, dict[str, Any]]:
    mcp, seen = build()

    @mcp.tool(task=True)
    def broken() -> str:
        raise MCPError(-32603, "backend unreachable")

    return serve_http(mcp), seen


def confirming(asked: list[str]) -> Callable[[ClientRequestContext, Any], ElicitResult]:
    def answer(context: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": True})
    return answer


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_task_true_returns_a_handle_whose_result_blocks_until_done(served: Any, mode: str) -> None:
    url, _ = served
    with Client(url, mode=mode) as client:
        handle = client.call_tool("add", {"a": 20, "b": 25}, task=True)
        assert isinstance(handle, TaskHandle) and handle.task_id
        assert handle.result(timeout=WAIT).content[0].text == "45"
        assert handle.status().status == "completed"


def test_a_plain_call_awaits_a_task_transparently(served: Any) -> None:
    url, seen = served
    seen["release"].set()
    with Client(url) as client:
        assert client.call_tool("gated").content[0].text == "released"


def test_a_tool_that_is_no_task_gives_an_already_finished_handle(served: Any) -> None:
    url, _ = served
    with Client(url) as client:
        handle = client.call_tool("plain", {"text": "x"}, task=True)
        assert handle.task_id is None
        assert handle.result().content[0].text == "plain x"
        assert handle.status().status == "completed"


def test_status_is_one_poll_while_the_body_runs(served: Any) -> None:
    url, seen = served
    with Client(url) as client:
        handle = client.call_tool("gated", task=True)
        assert handle.status().status == "working"
        seen["release"].set()
        assert handle.result(timeout=WAIT).content[0].text == "released"


def test_a_task_question_is_answered_by_the_same_elicitation_callback(served: Any) -> None:
    url, _ = served
    asked: list[str] = []
    with Client(url, elicitation_callback=confirming(asked)) as client:
        handle = client.call_tool("confirm", {"filename": "a.txt"}, task=True)
        assert handle.result(timeout=WAIT).content[0].text == "deleted"
        assert client.call_tool("confirm", {"filename": "b.txt"}).content[0].text == "deleted"
    assert asked == ["Delete a.txt?", "Delete b.txt?"]


def test_cancel_reaches_the_body_and_result_raises(served: Any) -> None:
    url, seen = served
    with Client(url) as client:
        handle = client.call_tool("endless", task=True)
        assert seen["running"].wait(WAIT)  # a task cancelled before its body starts never runs it
        handle.cancel()
        assert seen["stopped"].wait(WAIT)
        with pytest.raises(TaskCancelledError, match=handle.task_id or "?"):
            handle.result(timeout=WAIT)
        handle.cancel()  # cancelling a finished task is a no-op


def test_result_waits_at_most_its_timeout(served: Any) -> None:
    url, seen = served
    with Client(url) as client:
        handle = client.call_tool("gated", task=True)
        with pytest.raises(TimeoutError, match="call result\\(\\) again"):
            handle.result(timeout=0.05)
        seen["release"].set()
        assert handle.result(timeout=WAIT).content[0].text == "released"


def test_a_failed_task_raises_its_json_rpc_error(served: Any) -> None:
    url, _ = served
    with Client(url) as client:
        with pytest.raises(MCPError, match="backend unreachable") as failure:
            client.call_tool("broken", task=True).result(timeout=WAIT)
        assert failure.value.code == -32603


def test_an_unknown_task_is_a_clear_error(served: Any) -> None:
    url, _ = served
    with Client(url) as client:
        with pytest.raises(MCPError, match="Task not found"):
            client.session.send_request("tasks/get", {"taskId": "nope"}, GetTaskResult)


def test_tasks_work_in_memory_too() -> None:
    mcp, seen = build()
    seen["release"].set()
    asked: list[str] = []
    with Client(mcp, elicitation_callback=confirming(asked)) as client:
        assert client.call_tool("gated", task=True).result(timeout=WAIT).content[0].text == "released"
        assert client.call_tool("confirm", {"filename": "m.txt"}).content[0].text == "deleted"
    assert asked == ["Delete m.txt?"]


def test_another_connection_collects_the_result_by_task_id(served: Any) -> None:
    url, seen = served
    with Client(url) as first:
        task_id = first.call_tool("gated", task=True).task_id
    assert task_id is not None
    seen["release"].set()
    with Client(url) as second:
        handle = second.task(task_id)
        assert handle.task_id == task_id
        assert handle.result(timeout=WAIT).content[0].text == "released"
        with pytest.raises(MCPError, match="Task not found"):
            second.task("not-a-task")


def test_a_plain_call_awaiting_a_task_keeps_its_read_timeout_and_cancels_the_task(served: Any) -> None:
    """Before, the call waited for the task's TTL (an hour by default) whatever its read timeout."""
    url, seen = served
    with Client(url) as client:
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("endless", read_timeout_seconds=0.5)
    assert timed_out.value.code == REQUEST_TIMEOUT
    assert str(timed_out.value) == "Request 'tools/call' timed out"
    assert seen["stopped"].wait(WAIT), "the task the timed-out call left behind was not cancelled"
