"""The client side of the tasks extension against minimcp's own server over real HTTP:
``call_tool(..., task=True)`` handles, transparent tasks behind a plain ``call_tool``, a task's
questions answered by the same ``elicitation_callback``, cancellation and bounded waits."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
from pydantic import BaseModel

from minimcp import Client, MCPError, TaskCancelledError, TaskHandle
from minimcp.client import ClientRequestContext
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.shared.tasks import GetTaskResult
from minimcp.types import ElicitResult

WAIT = 10.0


class Copies(BaseModel):
    copies: int


def build() -> tuple[MCPServer[Any], dict[str, Any]]:
    mcp: MCPServer[Any] = MCPServer("tasks-client-test")
    seen: dict[str, Any] = {"release": threading.Event(), "stopped": threading.Event(), "asked": []}

    @mcp.tool(task=True)
    def report(year: int) -> str:
        return f"report {year}"

    @mcp.tool(task="required")
    def gated() -> str:
        seen["release"].wait(WAIT)
        return "released"

    @mcp.tool(task=True)
    def endless(ctx: Context) -> str:
        while not ctx.cancelled:
            seen["release"].wait(0.01)
        seen["stopped"].set()
        return "stopped"

    @mcp.tool(task=True)
    def printing(ctx: Context) -> str:
        answer = ctx.elicit("How many copies?", Copies)
        return f"printing {answer.data.copies}" if answer.action == "accept" else "not printing"

    @mcp.tool(task=True)
    def broken() -> str:
        raise MCPError(-32603, "backend unreachable")

    @mcp.tool()
    def plain() -> str:
        return "plain"

    return mcp, seen


@pytest.fixture
def served(serve_http: Callable[..., str]) -> tuple[str, dict[str, Any]]:
    mcp, seen = build()
    return serve_http(mcp), seen


def copies(seen: dict[str, Any]) -> Callable[[ClientRequestContext, Any], ElicitResult]:
    def answer(context: ClientRequestContext, params: Any) -> ElicitResult:
        seen["asked"].append((context.request_id, params.message))
        return ElicitResult(action="accept", content={"copies": 3})
    return answer


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_task_true_returns_a_handle_whose_result_blocks_until_done(served: Any, mode: str) -> None:
    url, _ = served
    with Client(url, mode=mode) as client:
        handle = client.call_tool("report", {"year": 2025}, task=True)
        assert isinstance(handle, TaskHandle) and handle.task_id
        assert handle.result(timeout=WAIT).content[0].text == "report 2025"
        assert handle.status().status == "completed"


def test_a_plain_call_awaits_a_task_transparently(served: Any) -> None:
    url, seen = served
    seen["release"].set()
    with Client(url) as client:
        assert client.call_tool("gated").content[0].text == "released"


def test_a_tool_that_is_no_task_gives_an_already_finished_handle(served: Any) -> None:
    url, _ = served
    with Client(url) as client:
        handle = client.call_tool("plain", task=True)
        assert handle.task_id is None
        assert handle.result().content[0].text == "plain"
        assert handle.status().status == "completed"


def test_status_is_one_poll_while_the_body_runs(served: Any) -> None:
    url, seen = served
    with Client(url) as client:
        handle = client.call_tool("gated", task=True)
        assert handle.status().status == "working"
        seen["release"].set()
        assert handle.result(timeout=WAIT).content[0].text == "released"


def test_a_task_question_is_answered_by_the_same_elicitation_callback(served: Any) -> None:
    url, seen = served
    with Client(url, elicitation_callback=copies(seen)) as client:
        handle = client.call_tool("printing", task=True)
        assert handle.result(timeout=WAIT).content[0].text == "printing 3"
        assert client.call_tool("printing").content[0].text == "printing 3"
    assert [message for _, message in seen["asked"]] == ["How many copies?", "How many copies?"]


def test_cancel_reaches_the_body_and_result_raises(served: Any) -> None:
    url, seen = served
    with Client(url) as client:
        handle = client.call_tool("endless", task=True)
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
