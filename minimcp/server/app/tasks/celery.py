"""``CeleryExecutor``: task bodies on the application's own Celery workers.

Why. A body on the pool of the web process that received it ends with that process: a deploy's
restart or a crash leaves the task failed. The Flask and Django applications minimcp serves run
their long work on Celery already, so a task tool's body goes there too::

    app = Celery("myapp", broker="redis://localhost:6379/0")
    mcp = MCPServer("myapp", backend="redis://localhost:6379/1",
                    tasks=TaskOptions(task_executor=CeleryExecutor(app, server="myapp.mcp:mcp")))

How. Every run of a body is one Celery task, ``minimcp.run_task`` (registered on every Celery app
by importing this module, as ``shared_task`` does), whose arguments are the server's dotted path and
the task's id, nothing more: the worker imports the server module (the same code, so the same tools
and the same task store), reads the task's record, which carries the job (``app/tasks/jobs.py``),
and runs the body with the answers recorded so far (``TaskManager.run_recorded``). The status, the
result and the questions are written to the task store, where every web process reads them; no web
process holds anything of the task, so any of them may restart or die meanwhile.

A question the body asks ends the run (the task turns ``input_required``, the worker is free); the
answer (``tasks/update``, which clients of both eras send) makes the web process that hears it queue
the next run, which replays the body from the top with its recorded answers, as every resumption
does. ``tasks/cancel`` marks the task cancelled and revokes its Celery task: one still queued never
runs, and a running body sees ``ctx.cancelled`` (the worker reads the record), as a body on the web
process's own pool does. ``terminate=True`` also has a prefork worker end the process running it.

The worker must import the server module: start it as ``celery -A myapp.mcp worker`` (the module
holds or imports the Celery app), or add the module to the app's ``imports``. Runs are
acknowledged late and given back when a worker process is lost, so a body whose worker died runs
again from the top (the replay rule again).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from minimcp.server.app.tasks.manager import TaskManager
from minimcp.server.core.faults import TaskStoreUnavailable
from minimcp.server.core.ports import TaskExecutor

try:
    from celery import Celery, shared_task
    from kombu.exceptions import OperationalError
except ImportError as missing:  # pragma: no cover - depends on the installation
    raise ImportError("CeleryExecutor needs Celery: pip install 'minimcp-sync[celery]'") from missing

logger = logging.getLogger("minimcp.server.tasks")

#: The one Celery task every run of every body is.
TASK_NAME = "minimcp.run_task"


@shared_task(name=TASK_NAME, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_task(server: str, task_id: str) -> None:
    """One run of a task's body, on a Celery worker."""
    manager_of(server).run_recorded(task_id)


def manager_of(server: str) -> TaskManager:
    """The task manager of the server at ``server`` (``"package.module:attribute"``), imported
    here (once per process: the module is then in ``sys.modules``)."""
    module_name, _, attribute = server.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part, None)
    tasks = getattr(found, "tasks", None)
    if not isinstance(tasks, TaskManager):
        raise LookupError(f"{server!r} names no MCPServer in this worker; CeleryExecutor(server=...) must name "
                          "the server as 'package.module:attribute', importable where the workers run")
    return tasks


class CeleryExecutor(TaskExecutor):
    """Runs task bodies on the workers of the Celery application ``app``.

    ``server`` is where a worker finds the server, ``"package.module:attribute"`` (the module that
    builds it). ``queue`` sends the runs to a queue of their own (default: the app's default
    queue). ``terminate=True`` makes ``tasks/cancel`` also end the worker process running the body,
    for bodies that never look at ``ctx.cancelled``; only the prefork pool can (the threads, solo
    and gevent pools log an error for it), and a body killed mid-way leaves its work half done, so
    by default cancellation is cooperative, as on the web process's own pool.

    Every process of the deployment, the workers too, builds the server with the same executor and
    the same shared task store (``backend="redis://..."`` or ``task_store=RedisTaskStore(...)``).
    """

    name = "celery"

    def __init__(self, app: Celery, server: str, *, queue: str | None = None, terminate: bool = False) -> None:
        module_name, colon, attribute = server.partition(":")
        if not (module_name and colon and attribute):
            raise ValueError(f"CeleryExecutor(server={server!r}): name the server as 'package.module:attribute', "
                             "e.g. 'myapp.mcp:mcp', so the workers can import it")
        self.app = app
        self.server = server
        self.queue = queue
        self.terminate = terminate

    def submit(self, task_id: str) -> None:
        options: dict[str, Any] = {"queue": self.queue} if self.queue else {}
        try:
            self.app.send_task(TASK_NAME, args=(self.server, task_id), task_id=task_id, **options)
        except OperationalError as down:
            raise TaskStoreUnavailable(f"The task queue (Celery's broker) is unavailable: {down}") from down

    def revoke(self, task_id: str) -> None:
        try:
            self.app.control.revoke(task_id, terminate=self.terminate)
        except OperationalError as down:  # the body still sees ctx.cancelled, from the record
            logger.warning("task %s: its Celery task was not revoked (%s)", task_id, down)
