"""The client side of the tasks extension: a handle on a tool call the server runs as a task.

``client.call_tool(name, arguments, task=True)`` returns a ``TaskHandle``; ``handle.result()``
blocks (bounded) until the task ends, answering the task's questions with the client's own
callbacks (``elicitation_callback`` and friends) on the way; ``handle.status()`` is one poll and
``handle.cancel()`` asks the server to stop; ``client.task(task_id)`` is a handle on a task whose id
was kept (from another connection, or across a restart of the client). Without ``task=True`` a
task is awaited the same way behind an ordinary ``call_tool``, so code written for plain results
keeps working.

    with Client(url, elicitation_callback=ask) as client:
        report = client.call_tool("build_report", {"year": 2025}, task=True)
        ...  # do something else
        print(report.result(timeout=600).content)
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from minimcp.jsonrpc import MCPError
from minimcp.shared.tasks import TERMINAL, CreateTaskResult, GetTaskResult
from minimcp.types import CallToolResult, EmptyResult, InputRequiredResult

ResultT = TypeVar("ResultT", bound=BaseModel)

#: How long ``result()`` waits when neither a timeout nor the task's TTL bounds it.
DEFAULT_WAIT = 3600.0
#: The poll interval used when the server suggests none.
DEFAULT_POLL_INTERVAL = 0.5


class TaskSession(Protocol):
    """What a ``TaskHandle`` asks of its ``ClientSession``: the ``tasks/*`` requests, and answers
    to the questions a task asks, through the client's callbacks."""

    def send_request(self, request: str, params: dict[str, Any], result_type: type[ResultT]) -> ResultT: ...

    def fulfil_input_requests(self, result: InputRequiredResult) -> dict[str, dict[str, Any]]: ...


class TaskCancelledError(RuntimeError):
    """The task was cancelled before it produced a result."""


class TaskHandle:
    """One task on the server; safe to share between threads.

    ``task_id`` is ``None`` when the server chose to answer at once (it may for any call): then
    ``result()`` returns that answer and ``status()`` says ``completed``.
    """

    def __init__(self, session: TaskSession, created: CreateTaskResult | None = None,
                 immediate: CallToolResult | None = None) -> None:
        if (created is None) == (immediate is None):
            raise ValueError("TaskHandle takes exactly one of created= or immediate=")
        self._session = session
        self.created = created
        self._immediate = immediate
        # _lock guards _answered (the inputRequests keys already answered: a key is asked once per
        # task, and polling sees it until the server has taken the answer in).
        self._lock = threading.Lock()
        self._answered: set[str] = set()

    @property
    def task_id(self) -> str | None:
        return self.created.task_id if self.created is not None else None

    def __repr__(self) -> str:
        return f"TaskHandle(task_id={self.task_id!r})"

    def status(self) -> GetTaskResult:
        """Poll once: the task as the server describes it now (``tasks/get``)."""
        if self.created is None:
            return GetTaskResult(task_id="", status="completed", created_at="", last_updated_at="", ttl_ms=None,
                                 result=self._immediate.model_dump(by_alias=True, exclude_none=True, mode="json")
                                 if self._immediate else None)
        return self._session.send_request("tasks/get", {"taskId": self.created.task_id}, GetTaskResult)

    def cancel(self) -> None:
        """Ask the server to stop the task (``tasks/cancel``); cancelling a finished task changes nothing."""
        if self.created is not None:
            self._session.send_request("tasks/cancel", {"taskId": self.created.task_id}, EmptyResult)

    def result(self, timeout: float | None = None) -> CallToolResult:
        """Wait for the task to end and return the tool's result.

        Waits at most ``timeout`` seconds (default: the task's TTL, else an hour) and then raises
        ``TimeoutError`` (the task keeps running; call ``result()`` again or ``cancel()``). Questions
        the task asks are answered through this client's callbacks; a callback's refusal raises its
        ``MCPError`` and the task keeps waiting for an answer. A task that failed raises its
        ``MCPError``; a cancelled one raises ``TaskCancelledError``.
        """
        if self.created is None:
            assert self._immediate is not None
            return self._immediate
        if timeout is None:
            ttl = self.created.ttl_ms
            timeout = ttl / 1000 if ttl else DEFAULT_WAIT
        deadline = time.monotonic() + timeout
        interval = (self.created.poll_interval_ms or 0) / 1000 or DEFAULT_POLL_INTERVAL
        while True:
            state = self.status()
            if state.poll_interval_ms:
                interval = state.poll_interval_ms / 1000
            if state.status in TERMINAL:
                return self._outcome(state)
            if state.status == "input_required" and state.input_requests and self._answer(state.input_requests):
                continue  # answered something new: see at once where that took the task
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"Task {self.created.task_id} was still {state.status} after {timeout:g}s; "
                                   "call result() again to keep waiting, or cancel() it")
            time.sleep(min(interval, remaining))

    def _answer(self, requests: dict[str, dict[str, Any]]) -> bool:
        """Answer the requests not answered yet (``tasks/update``); whether there were any."""
        with self._lock:
            fresh = {key: request for key, request in requests.items() if key not in self._answered}
            self._answered.update(fresh)
        if not fresh:
            return False
        question = InputRequiredResult.model_validate({"resultType": "input_required", "inputRequests": fresh})
        responses = self._session.fulfil_input_requests(question)
        assert self.created is not None
        self._session.send_request("tasks/update", {"taskId": self.created.task_id, "inputResponses": responses},
                                   EmptyResult)
        return True

    def _outcome(self, state: GetTaskResult) -> CallToolResult:
        if state.status == "completed":
            return CallToolResult.model_validate(state.result or {})
        if state.status == "failed":
            error = state.error or {}
            raise MCPError(int(error.get("code", -32603)), str(error.get("message", "Task failed")), error.get("data"))
        raise TaskCancelledError(f"Task {state.task_id} was cancelled"
                                 + (f": {state.status_message}" if state.status_message else ""))
