"""The wire vocabulary of the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

Both sides use it: the server to answer ``tools/call`` with a task and to serve ``tasks/get``,
``tasks/update`` and ``tasks/cancel``; the client to recognise a task and poll it. A task is a
flat object (``taskId``, ``status``, timestamps, ``ttlMs``, ``pollIntervalMs``); ``tasks/get``
inlines what the status carries (``inputRequests``, ``result`` or ``error``). There is no
``tasks/result`` and no ``tasks/list`` in this extension, and no ``requestState`` on a task.
"""

from __future__ import annotations

from typing import Any, Literal

from minimcp.shared.extension import declares_extension, extension_required_data
from minimcp.types import MCPModel, Result
from minimcp.types.methods import METHODS, TASKS_EXTENSION

#: The ``resultType`` of a ``tools/call`` answered with a task.
TASK_RESULT_TYPE = "task"

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]

#: Statuses a task never leaves.
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

#: The extension's methods: the method table's rows that belong to it.
TASK_METHODS = tuple(row.name for row in METHODS.values() if row.extension == TASKS_EXTENSION)


class Task(MCPModel):
    """A task as ``tools/call`` creates it and ``tasks/get`` describes it."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class CreateTaskResult(Result, Task):
    """``tools/call`` answered with a task handle instead of the tool's result."""

    result_type: str | None = TASK_RESULT_TYPE


class GetTaskResult(Result, Task):
    """``tasks/get``: the task, with ``input_requests`` while it waits, ``result`` or ``error`` at the end."""

    input_requests: dict[str, dict[str, Any]] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    result_type: str | None = None


def tasks_required_data() -> dict[str, Any]:
    """The ``data`` of the -32021 error a client gets when it must declare the extension."""
    return extension_required_data(TASKS_EXTENSION)


def declares_tasks(capabilities: Any) -> bool:
    """Whether a ``ClientCapabilities`` (or its wire dict) declares the tasks extension."""
    return declares_extension(capabilities, TASKS_EXTENSION)


__all__ = [
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "TASK_RESULT_TYPE",
    "TERMINAL",
    "CreateTaskResult",
    "GetTaskResult",
    "Task",
    "TaskStatus",
    "declares_tasks",
    "tasks_required_data",
]
