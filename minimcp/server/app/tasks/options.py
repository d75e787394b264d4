"""``TaskOptions``: where a server's tasks are kept, where and how many bodies run at once, declared once."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from minimcp.server.app.tasks.channel import TaskChannel
    from minimcp.server.app.tasks.store import TaskStore
    from minimcp.server.core.ports import TaskExecutor


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskOptions:
    """The tasks extension's options (``MCPServer(tasks=TaskOptions(...))``, or each field as a
    keyword of its own, ``MCPServer(task_store=...)``). Task bodies run on a pool of their own, so
    long work never takes the workers that answer calls."""

    #: Where task records are kept (default ``None``: the backend's, this process's memory unless
    #: the backend is shared); several processes share one, e.g. ``RedisTaskStore``.
    task_store: TaskStore | None = None
    #: What carries word between the processes sharing ``task_store`` (default ``None``: the
    #: backend's), e.g. ``RedisTaskChannel``.
    task_channel: TaskChannel | None = None
    #: Task bodies running at once (default 16); a body past them waits its turn in a queue, so a
    #: burst of tasks costs no more threads.
    max_task_workers: int = 16
    #: Of those, the ones one principal's bodies may hold (default ``None``: a quarter), so one
    #: caller's burst leaves workers to the others.
    max_task_workers_per_principal: int | None = None
    #: Where the bodies run (default ``None``: on this process's own pool, above). An executor such
    #: as ``CeleryExecutor`` runs them on the application's own workers, so a task outlives the web
    #: process that created it; it needs a ``task_store`` every process shares (``RedisTaskStore``).
    task_executor: TaskExecutor | None = None


class TaskKeywords(TypedDict, total=False):
    """``TaskOptions``' fields as keywords of ``MCPServer``'s constructor."""

    task_store: TaskStore | None
    task_channel: TaskChannel | None
    max_task_workers: int
    max_task_workers_per_principal: int | None
    task_executor: TaskExecutor | None
