"""Running tasks: a ``tools/call`` that becomes a task, its body on a worker thread, and ``tasks/*``.

Theory of operation. A tool registered with ``task="optional"`` or ``"required"`` is called as
usual until its arguments are validated and its ``Resolve(...)`` parameters are settled (those
questions travel as ordinary ``input_required`` rounds of the ``tools/call`` itself). Then, when
the request declares the extension, the task record is stored (so a ``tasks/get`` right after the
answer finds it), the body is handed to this manager's own worker pool, and the call answers with
the task handle. The body is the tool's ordinary ``def`` with an ordinary ``Context``; it keeps
running after the HTTP request that created it has ended.

A question the body asks (``ctx.elicit`` and friends) is answered from the answers the task has
gathered; an unanswered one ends the run: the task turns ``input_required`` with the question under
``inputRequests`` and the worker thread is free. A body may also return a hand-built
``InputRequiredResult``; its requests are surfaced the same way, and the next run reads the answers
from ``ctx.input_responses``. ``tasks/update`` records answers; once every outstanding request is
answered, the body runs again from the top (replay: code before a question must be safe to run
twice, as on any 2026-07-28 request), and each answered question returns its answer at once.

``tasks/cancel`` settles the task as ``cancelled`` at once and sets ``ctx.cancelled`` for a body
that is still running; the TTL does the same when it elapses. Cancellation is cooperative: a body
that never looks at ``ctx.cancelled`` keeps its thread until it returns, and what it returns then
is dropped.

A task belongs to the principal that created it; every ``tasks/*`` request for someone else's task
is answered exactly as for an unknown id. Each change a client can observe is also published as
``notifications/tasks`` (what ``tasks/get`` would answer) to the ``subscriptions/listen`` streams
that named the task in ``taskIds``; a listen may name only its caller's own tasks.

Several processes. With a shared store and a shared ``TaskChannel`` (``RedisTaskStore`` and
``RedisTaskChannel``), any process answers ``tasks/*``: the record says which process holds the body
(``runner``), a cancellation or a resumption is told to that process over the channel and acted on
there exactly as a local one, and status notifications are announced on the channel to every
process's listens. A reader that finds an unfinished task whose process no longer beats fails it
("the server process running this task stopped"), so no task stays ``working`` forever.

Elsewhere. With a ``TaskExecutor`` (``CeleryExecutor``) no web process holds a body: the record
carries its job (``jobs.py``) and names the executor as its runner, every run is handed to the
executor (the first by the creating request, each resumption by the request that brought the last
answer, in whichever process), and the executor's worker runs it with ``run_recorded``, reading
the record's answers and writing the outcome back to the store. A cancellation is the record's
status, which the running body reads as ``ctx.cancelled``, and the executor's revocation; no
heartbeat of a web process applies, so a web process may restart or die while the body runs.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Protocol

from pydantic import BaseModel

from minimcp.jsonrpc import MCPError
from minimcp.server.core.outbox import Outbox
from minimcp.server.core.workers import WorkerPool
from minimcp.server.core.questions import Questions
from minimcp.server.core.rounds import InputRequired, digest, validated_answer
from minimcp.server.core.shares import Shares, fair_share, principal_of
from minimcp.server.core.context import ServerRequestContext
from minimcp.server.core.context import ServerSession
from minimcp.server.core.sessions import Connection
from minimcp.server.app.context import Context, ContextServer
from minimcp.server.app.exceptions import ToolError
from minimcp.server.app.tools import failure_result
from minimcp.server.app.tasks.channel import LocalTaskChannel
from minimcp.server.app.tasks.jobs import connection_of, job_of, transport_of, values_of
from minimcp.server.app.tasks.store import InMemoryTaskStore
from minimcp.server.core.faults import TaskExpired, TaskLimitReached, TaskNotFound, TaskStoreUnavailable
from minimcp.server.core.ports import EXECUTOR_RUNNER, TaskChannel, TaskExecutor, TaskRecord, TaskStore
from minimcp.server.core.workers import wall_clock
from minimcp.shared.tasks import (
    CreateTaskResult,
    GetTaskResult,
    declares_tasks,
    tasks_required_data,
)
from minimcp.shared.transport_context import TransportContext
from minimcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    META_CLIENT_CAPABILITIES,
    InputRequiredResult,
    dump,
)

if TYPE_CHECKING:
    from minimcp.server.app.tools import Tool
    from minimcp.server.core.served import Broadcasting

logger = logging.getLogger("minimcp.server.tasks")


class _Expiring(threading.Event):
    """A cancellation flag that also turns itself on when the task's TTL has passed.

    ``Context.cancelled`` reads ``is_set()``, so a body that polls it stops at its deadline without
    a timer thread; ``set()`` is the explicit cancellation.
    """

    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def is_set(self) -> bool:
        return super().is_set() or time.monotonic() >= self._deadline


class _Watched(_Expiring):
    """The cancellation flag of a body run by a task executor's worker, far from the web process
    that hears ``tasks/cancel``: it also turns on once the task's record has ended (cancelled, or
    gone). The record is read at most every ``every`` seconds, on the thread of a body polling
    ``ctx.cancelled``, so a tight polling loop costs the store a few reads a second."""

    def __init__(self, deadline: float, ended: Callable[[], bool], every: float = 0.25) -> None:
        super().__init__(deadline)
        self._ended = ended
        self._every = every
        # _lock guards _next_look: the body may poll from threads it starts, and one read at a time suffices.
        self._lock = threading.Lock()
        self._next_look = 0.0

    def is_set(self) -> bool:
        if super().is_set():
            return True
        with self._lock:
            now = time.monotonic()
            if now < self._next_look:
                return False
            self._next_look = now + self._every
        try:
            ended = self._ended()
        except TaskStoreUnavailable as down:  # the store's absence is no cancellation: look again later
            logger.warning("a task body could not learn whether it was cancelled (%s)", down)
            return False
        if ended:
            self.set()
        return ended


class TaskOutbox(Outbox):
    """The outbox of a task's body. The call's response has gone, so nothing travels from here; the
    message of ``ctx.report_progress(...)`` becomes the task's ``statusMessage`` instead."""

    def __init__(self, deadline: float, describe: Callable[[str], None],
                 cancelled: _Expiring | None = None) -> None:
        super().__init__(can_request=False)
        self.cancelled = cancelled if cancelled is not None else _Expiring(deadline)
        self._describe = describe

    def _deliver(self, message: dict[str, Any], final: bool) -> None:
        if message.get("method") == "notifications/progress":
            text = (message.get("params") or {}).get("message")
            if isinstance(text, str):
                self._describe(text)


class TaskQuestions(Questions):
    """The ``Questions`` strategy inside a task: a recorded answer, or the run ends waiting for one."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self._answers = answers
        self.pending: dict[str, dict[str, Any]] = {}

    def ask(self, key: str, method: str, params: dict[str, Any], gate: Any) -> dict[str, Any]:
        request = {"method": method, "params": params}
        recorded = self._answers.get(key)
        if recorded is not None:
            if recorded["d"] != digest(request):
                raise MCPError(INTERNAL_ERROR, f"The question '{key}' changed between runs of this task; questions "
                                               "must be built from the arguments and earlier answers")
            return recorded["r"]
        gate()
        self.pending[key] = request
        raise InputRequired({key: request})


@dataclass
class _Live:
    """What only this process holds for an unfinished task: the body to run and its flag."""

    tool: Tool
    values: dict[str, Any]
    meta: dict[str, Any] | None
    connection: Connection
    transport: TransportContext
    outbox: TaskOutbox
    deadline: float
    context: contextvars.Context  # of the creating request, for a resumption from another process


@dataclass
class _Turn:
    """One run of a body, as its caller submitted it: the context it was submitted in (a copy,
    so the caller's context variables, access token and host user among them), the host's call
    scope (``MCPServer.call_scope``), built on the submitting thread and entered on the worker, and
    the principal whose share of the workers it counts against."""

    task_id: str
    live: _Live
    context: contextvars.Context
    scope: AbstractContextManager[Any]
    principal: str | None


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _task_fields(record: TaskRecord) -> dict[str, Any]:
    return {"task_id": record.task_id, "status": record.status, "status_message": record.status_message,
            "created_at": _iso(record.created_at), "last_updated_at": _iso(record.updated_at),
            "ttl_ms": record.ttl_ms, "poll_interval_ms": record.poll_interval_ms}


def detailed(record: TaskRecord) -> dict[str, Any]:
    """The ``tasks/get`` answer (and a status notification's params) for ``record``."""
    result = GetTaskResult(
        result_type="complete",
        input_requests=record.input_requests if record.status == "input_required" else None,
        result=record.result if record.status == "completed" else None,
        error=record.error if record.status == "failed" else None,
        **_task_fields(record),
    )
    return dump(result)


class TaskServer(ContextServer, Protocol):
    """The ``MCPServer`` whose tasks a ``TaskManager`` runs: what a body's ``Context`` uses, and the
    lifespan, the call scope and the broadcast a task's status changes go out on."""

    @property
    def dispatcher(self) -> Broadcasting: ...

    def lifespan_context(self) -> Any: ...

    def call_scope(self) -> AbstractContextManager[Any]: ...

    def get_tool(self, name: Any) -> Tool | None: ...


class TaskManager:
    """The tasks of one ``MCPServer``: creation, the bodies' worker pool, and the ``tasks/*`` answers.

    ``ttl`` (seconds) is how long a task is kept after creation, ``poll_interval`` (seconds) what
    clients are told to wait between polls, ``max_running`` how many bodies run at once: a body
    that finds them all busy waits its turn in a queue (its task stays ``working``), and each worker
    takes the next queued body when its own ends, so a burst of tasks costs no more threads.
    Each body runs in its own caller's context, whichever worker takes it: the ``contextvars``
    context and the host's call scope of the request that started (or resumed) it; a body resumed
    from another process runs in the context of the request that created it.

    ``max_running_per_principal`` (default a quarter of ``max_running``) is how many of those
    workers one principal's bodies may hold (``core/shares.py``): a principal's further bodies
    queue while other principals' bodies run, and a freed worker takes the first queued body whose
    principal is under its share.

    ``store`` keeps the records (default: an ``InMemoryTaskStore`` of this process); ``channel``
    carries status notifications, cancellations, resumptions and heartbeats between the processes
    sharing that store (default: a ``LocalTaskChannel``, every message a direct call). A deployment
    of several processes passes a shared pair, e.g. ``RedisTaskStore(client)`` and
    ``RedisTaskChannel(client)`` over one ``redis.Redis``.

    ``executor`` (``TaskExecutor``, e.g. ``CeleryExecutor``) runs the bodies on workers of its own
    instead of this pool: the record carries the job, every run is handed to the executor (the
    first, and each resumption, from whichever process heard the last answer), and its worker runs
    it with ``run_recorded``. The pool and the channel's resumptions then serve no body; the
    channel still carries the status notifications.
    """

    def __init__(self, server: TaskServer, store: TaskStore | None = None, *, ttl: float = 3600.0,
                 poll_interval: float = 0.5, max_running: int = 16,
                 max_running_per_principal: int | None = None, channel: TaskChannel | None = None,
                 executor: TaskExecutor | None = None) -> None:
        if ttl <= 0 or poll_interval <= 0:
            raise ValueError("task ttl and poll_interval must be positive")
        self.server = server
        self.executor = executor
        self.store = store if store is not None else InMemoryTaskStore()
        self.channel = channel if channel is not None else LocalTaskChannel()
        self.channel.attach(self._deliver, self._catch_up)
        self.ttl = ttl
        self.poll_interval = poll_interval
        self.pool = WorkerPool(max_running, wait_timeout=60.0)
        self.max_running = max_running
        share = fair_share(max_running, 4) if max_running_per_principal is None else max_running_per_principal
        #: The workers each principal's bodies hold; taken and given back under ``_lock`` (its own
        #: lock is innermost), so a body is counted exactly while it has a worker.
        self.worker_shares = Shares(share, "Too many task bodies running for this caller (limit {limit})")
        # _lock guards _live (task id -> _Live, in creation order), _active (ids of the bodies queued
        # or running: a body is never submitted twice), _again (the next turn of an active body
        # resumed meanwhile: it runs when the current run ends), _queue (bodies waiting for a
        # worker) and _running (workers busy with bodies, at most max_running). Never held while
        # calling the store, the channel, the pool or a body.
        self._lock = threading.Lock()
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._active: set[str] = set()
        self._again: dict[str, _Turn] = {}
        self._queue: deque[_Turn] = deque()
        self._running = 0

    @property
    def max_running(self) -> int:
        return self.pool.max_workers

    @max_running.setter
    def max_running(self, value: int) -> None:
        if value < 1:
            raise ValueError("max_running must be at least 1")
        self.pool.max_workers = value

    # --- tools/call ------------------------------------------------------------------------------
    def call(self, tool: Tool, arguments: dict[str, Any] | None, ctx: Context) -> Any:
        """Answer ``tools/call`` for a task tool: a task handle, or the plain result without the extension."""
        declared = _declares(ctx)
        if not declared and tool.task == "required":
            raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                           f"Tool '{tool.name}' runs only as a task; declare the io.modelcontextprotocol/tasks "
                           "extension in the client capabilities", tasks_required_data())
        if not declared:
            return tool.run(arguments, ctx)
        values = tool.prepare(arguments, ctx)
        if self.executor is not None:
            return self._hand_over(tool, arguments, values, ctx, self.executor)
        return self._start(tool, values, ctx)

    def _record(self, rc: ServerRequestContext[Any, Any], runner: str) -> TaskRecord:
        """A new task's record, ``working``, held by ``runner``."""
        now = time.time()
        return TaskRecord(task_id=secrets.token_urlsafe(24), owner=_owner(rc), status="working", created_at=now,
                          updated_at=now, ttl_ms=round(self.ttl * 1000), expires_at=now + self.ttl,
                          poll_interval_ms=max(1, round(self.poll_interval * 1000)), runner=runner)

    def _hand_over(self, tool: Tool, arguments: dict[str, Any] | None, values: dict[str, Any], ctx: Context,
                   executor: TaskExecutor) -> CreateTaskResult:
        """Start a task whose body runs on ``executor``'s workers: the record, with its job, then the first run."""
        if isinstance(self.store, InMemoryTaskStore):  # a host may give the shared backend after construction
            raise MCPError(INTERNAL_ERROR, "A task executor runs task bodies in other processes, which must see the "
                                           "same tasks: give the server a shared task store (backend='redis://...', or "
                                           "task_store=RedisTaskStore(...)) in every process, the workers' too")
        rc = ctx.request_context
        record = self._record(rc, EXECUTOR_RUNNER + executor.name)
        meta = {**(rc.meta or {}), "progressToken": record.task_id}
        job = job_of(tool, arguments, values, rc.session.connection, rc.transport, meta)
        record = dataclasses.replace(record, job=job)
        try:
            with _reachable():
                self.store.create(record)
        except TaskLimitReached as full:
            raise MCPError(INTERNAL_ERROR, str(full)) from None
        self._run_on_executor(record.task_id, executor)
        return CreateTaskResult(**_task_fields(record))

    def _run_on_executor(self, task_id: str, executor: TaskExecutor) -> None:
        """Queue a run of the body on ``executor``, for the request that started or resumed it. When
        the executor's queue is out of reach, the task fails rather than wait for a run that never
        comes, and that request hears "try again"."""
        try:
            executor.submit(task_id)
        except TaskStoreUnavailable as down:
            self._finish(task_id, "failed", error={"code": INTERNAL_ERROR, "message": f"{down}; start the task again"},
                         message=str(down))
            raise MCPError(INTERNAL_ERROR, f"{down}; try again") from None

    def _start(self, tool: Tool, values: dict[str, Any], ctx: Context) -> CreateTaskResult:
        self._sweep()
        rc = ctx.request_context
        record = self._record(rc, self.channel.process_id)
        deadline = time.monotonic() + self.ttl
        task_id = record.task_id
        outbox = TaskOutbox(deadline, lambda text: self._describe(task_id, text))
        meta = {**(rc.meta or {}), "progressToken": task_id}  # so ctx.report_progress reaches the outbox
        live = _Live(tool, values, meta, rc.session.connection, rc.transport, outbox, deadline,
                     contextvars.copy_context())
        try:
            with _reachable():
                self.store.create(record)
        except TaskLimitReached as full:
            raise MCPError(INTERNAL_ERROR, str(full)) from None
        with self._lock:
            self._live[record.task_id] = live
        self._submit(record.task_id, live)
        return CreateTaskResult(**_task_fields(record))

    def _submit(self, task_id: str, live: _Live) -> None:
        """Run the body on a free worker, or queue it for the next worker that frees up.

        Called on the thread of the request that starts (or resumes) the body, while its caller's
        context is current: the turn captures it, and the body runs in it whichever worker takes it.
        """
        self._enqueue(_Turn(task_id, live, contextvars.copy_context(), self.server.call_scope(),
                            principal_of(live.transport, live.connection)))

    def _submit_as_created(self, task_id: str, live: _Live) -> None:
        """``_submit`` for a resumption heard from another process (or caught up with), where no
        request of this process stands behind it: the body runs in the context of the request that
        created it, and the host's call scope is built in that context."""
        context = live.context.copy()
        try:
            scope = context.run(self.server.call_scope)
        except Exception:  # without its caller's scope the body must not run at all
            logger.exception("task %s: the host's call scope could not be rebuilt", task_id)
            self._settle(task_id, "failed", error={"code": INTERNAL_ERROR, "message": "Internal error"})
            return
        self._enqueue(_Turn(task_id, live, context, scope, principal_of(live.transport, live.connection)))

    def _enqueue(self, turn: _Turn) -> None:
        """Hand ``turn`` to a free worker, or queue it. A body already queued or running takes it as
        its next turn, run when the current one ends (its record then decides whether there is
        anything to do: a resumption may be heard twice)."""
        task_id = turn.task_id
        with self._lock:
            if task_id in self._active:
                self._again[task_id] = turn
                return
            self._active.add(task_id)
            if self._running >= self.max_running or not self.worker_shares.try_take(turn.principal):
                self._queue.append(turn)
                return
            self._running += 1
        try:
            self.pool.submit(lambda: self._work(turn))
        except MCPError as busy:  # the pool is ours alone and sized to max_running: only when closed
            with self._lock:
                self._running -= 1
                self._active.discard(task_id)
                self.worker_shares.give_back(turn.principal)
            self._settle(task_id, "failed", error=busy.to_wire())

    def _work(self, turn: _Turn) -> None:
        """One worker's loop: this body, then every body queued meanwhile, each in its own caller's
        context (host user, access token, context variables), never in the one before it."""
        while True:
            try:
                turn.context.run(self._run_turn, turn)
            except BaseException:  # a failing store must not cost the manager a worker slot
                logger.exception("task %s could not be run", turn.task_id)
            self._idle(turn.task_id)
            with self._lock:
                self.worker_shares.give_back(turn.principal)
                following = self._next_turn()
                if following is None:
                    self._running -= 1
                    return
                turn = following

    def _next_turn(self) -> _Turn | None:
        """Under ``_lock``: take the first queued body whose principal is under its share, counted."""
        for index, turn in enumerate(self._queue):
            if self.worker_shares.try_take(turn.principal):
                del self._queue[index]
                return turn
        return None

    def _run_turn(self, turn: _Turn) -> None:
        with turn.scope:
            self._run(turn.task_id, turn.live)

    def _idle(self, task_id: str) -> None:
        """A run of the body ended: submit it again if it was resumed meanwhile."""
        with self._lock:
            self._active.discard(task_id)
            turn = self._again.pop(task_id, None)
        if turn is not None:
            self._enqueue(turn)

    # --- running a body --------------------------------------------------------------------------
    def _run(self, task_id: str, live: _Live) -> None:
        try:
            record = self.store.get(task_id)
        except TaskNotFound:
            self._forget(task_id)
            return
        if record.terminal:
            self._forget(task_id)
            return
        if record.status != "working":  # a resumption heard twice: the body waits for answers again
            return
        self._execute(record, live.tool, lambda: live.values, live.connection, live.transport, live.outbox,
                      live.meta)

    def run_recorded(self, task_id: str) -> None:
        """Run one turn of a task's body from its record alone: what a task executor's worker does,
        in a process where no request stands behind it (the same server module imported, the same
        store). A task that has ended, waits for answers or is gone is left as it is: a run queued
        twice, or redelivered after a worker was lost, does nothing or runs the body again from the
        top, as every resumption does."""
        try:
            record = self.store.get(task_id)
        except (TaskNotFound, TaskExpired):
            return
        if record.status != "working":
            return
        job = record.job
        tool = self.server.get_tool(job.get("tool")) if job is not None else None
        if job is None or tool is None:
            named = job.get("tool") if job is not None else None
            self._finish(task_id, "failed", error={"code": INTERNAL_ERROR, "message": (
                f"The task's tool {named!r} is not served by the server this worker imported; "
                "deploy the same server module to the web processes and the workers")})
            return
        deadline = time.monotonic() + max(0.0, record.expires_at - wall_clock())
        watched = _Watched(deadline, lambda: self._ended(task_id))
        outbox = TaskOutbox(deadline, lambda text: self._describe(task_id, text), watched)
        with self.server.call_scope():
            self._execute(record, tool, lambda: values_of(tool, job), connection_of(job), transport_of(job), outbox,
                          job.get("meta"))

    def _ended(self, task_id: str) -> bool:
        """Whether the task's record has ended (or is gone): its body is to stop."""
        try:
            return self.store.get(task_id).terminal
        except (TaskNotFound, TaskExpired):
            return True

    def _execute(self, record: TaskRecord, tool: Tool, values: Callable[[], dict[str, Any]], connection: Connection,
                 transport: TransportContext, outbox: TaskOutbox, meta: dict[str, Any] | None) -> None:
        """One run of the body with the answers recorded so far, and its outcome kept in the store.
        ``values`` makes the body's parameters inside, so a job that no longer fits its tool fails the task."""
        task_id = record.task_id
        questions = TaskQuestions(record.answers)
        answers = {key: answer["r"] for key, answer in record.answers.items()}
        rc = ServerRequestContext(session=ServerSession(connection, outbox, task_id, meta),
                                  lifespan_context=self.server.lifespan_context(),
                                  protocol_version=connection.protocol_version, method="tools/call",
                                  request_id=task_id, meta=meta, transport=transport,
                                  outbox=outbox, era=connection.era)
        context = Context(rc, self.server, questions, answers or None, record.state)
        try:
            result = tool.invoke(values(), context)
        except InputRequired:
            self._park(task_id, questions.pending, record.state)
        except MCPError as exc:
            self._settle(task_id, "failed", error=exc.to_wire(), message=exc.message)
        except ToolError as failure:  # the task completes with the error result tools/call gives
            self._settle(task_id, "completed", result=dump(failure_result(failure)))
        except BaseException:  # the body's failure is the task's, never the worker's
            logger.exception("task %s of tool %s failed", task_id, tool.name)
            self._settle(task_id, "failed", error={"code": INTERNAL_ERROR, "message": "Internal error"})
        else:
            if isinstance(result, InputRequiredResult):
                if not result.input_requests:
                    self._settle(task_id, "failed", error={"code": INTERNAL_ERROR, "message": "Internal error"})
                    logger.error("task %s: tool %s returned an InputRequiredResult without inputRequests",
                                 task_id, tool.name)
                else:
                    self._park(task_id, result.input_requests, result.request_state)
            else:
                self._settle(task_id, "completed", result=dump(result))

    def _park(self, task_id: str, requests: dict[str, Any], state: str | None) -> None:
        """The body waits for answers: surface its requests; its thread ends."""
        wire = {key: dump(value) if isinstance(value, BaseModel) else value for key, value in requests.items()}

        def change(record: TaskRecord) -> TaskRecord | None:
            if record.terminal:
                return None
            answers = {key: answer for key, answer in record.answers.items() if key not in wire}
            return record.changed(status="input_required", input_requests=wire, answers=answers, state=state)

        self._publish(self.store.update(task_id, change))

    def _settle(self, task_id: str, status: str, *, result: dict[str, Any] | None = None,
                error: dict[str, Any] | None = None, message: str | None = None) -> None:
        """The body of this process is done: the task ends as ``status`` and this process lets it go."""
        self._finish(task_id, status, result=result, error=error, message=message)
        self._forget(task_id)

    def _finish(self, task_id: str, status: str, *, result: dict[str, Any] | None = None,
                error: dict[str, Any] | None = None, message: str | None = None) -> TaskRecord | None:
        """End the task as ``status`` unless it has ended already; the record as it ends, if it did."""
        def change(record: TaskRecord) -> TaskRecord | None:
            if record.terminal:
                return None
            return record.changed(status=status, input_requests={}, result=result, error=error,
                                  status_message=message)

        ended = self.store.update(task_id, change)
        self._publish(ended)
        return ended

    def _describe(self, task_id: str, text: str) -> None:
        """A running body's progress message, shown as the task's ``statusMessage``."""
        def change(record: TaskRecord) -> TaskRecord | None:
            return record.changed(status_message=text) if record.status == "working" else None

        try:
            self._publish(self.store.update(task_id, change))
        except TaskStoreUnavailable as down:  # a lost progress message must not fail the body
            logger.warning("task %s: status message not kept (%s)", task_id, down)

    def _publish(self, record: TaskRecord | None) -> None:
        """Tell the listens that asked about this task (``notifications/tasks``), in every process:
        what ``tasks/get`` says now."""
        if record is not None:
            params = {key: value for key, value in detailed(record).items() if key != "resultType"}
            self.channel.announce(record.task_id, params)

    # --- what the channel brings ----------------------------------------------------------------
    def _deliver(self, kind: str, task_id: str, params: dict[str, Any] | None) -> None:
        """A message of the channel: a status for this process's listens, or word for a body held here."""
        if kind == "status":
            self.server.dispatcher.listens.publish("notifications/tasks", params, uri=task_id)
        elif kind == "cancel":
            self._stop(task_id)
        elif kind == "resume":
            self._resume(task_id, on_request=False)

    def _here(self, record: TaskRecord) -> bool:
        """Whether this process holds the body of ``record``'s task."""
        return record.runner in (None, self.channel.process_id)

    def _executor_of(self, record: TaskRecord) -> TaskExecutor | None:
        """The executor running ``record``'s body; ``None`` when a process holds it. A task of an
        executor this process lacks is a deployment whose processes differ: said, not guessed at."""
        if record.runner is None or not record.runner.startswith(EXECUTOR_RUNNER):
            return None
        name = record.runner.removeprefix(EXECUTOR_RUNNER)
        if self.executor is None or self.executor.name != name:
            raise MCPError(INTERNAL_ERROR, f"This task runs on the task executor {name!r}, which this server process "
                                           "lacks; give every process the same TaskOptions(task_executor=...)")
        return self.executor

    def _stop(self, task_id: str) -> None:
        """Set the cancel flag of the body held here (a cancellation, local or heard from elsewhere)."""
        live = self._forget(task_id)
        if live is not None:
            live.outbox.abort()

    def _resume(self, task_id: str, *, on_request: bool) -> None:
        """Run the body held here again: in the resuming request's context when ``on_request`` (this
        thread is that request's), else in the creating request's."""
        with self._lock:
            live = self._live.get(task_id)
        if live is None:
            self._settle(task_id, "failed", error={
                "code": INTERNAL_ERROR, "message": "The task's body is no longer held by this server process"})
        elif on_request:
            self._submit(task_id, live)
        else:
            self._submit_as_created(task_id, live)

    def _catch_up(self) -> None:
        """A shared channel's periodic tick: act on the records of the bodies held here, in case the
        message of a cancellation or a resumption was lost (pub/sub keeps nothing for an absent listener)."""
        self._sweep()
        with self._lock:
            held = [(task_id, task_id in self._active) for task_id in self._live]
        for task_id, active in held:
            try:
                record = self.store.get(task_id)
            except TaskNotFound:
                self._stop(task_id)
                continue
            if record.terminal:
                self._stop(task_id)
            elif record.status == "working" and not active:
                self._resume(task_id, on_request=False)

    def _forget(self, task_id: str) -> _Live | None:
        with self._lock:
            return self._live.pop(task_id, None)

    def _sweep(self) -> None:
        """Drop what this process holds for tasks whose TTL has passed, and flag their bodies."""
        now = time.monotonic()
        expired: list[_Live] = []
        with self._lock:
            while self._live:
                task_id, live = next(iter(self._live.items()))
                if live.deadline > now:
                    break
                del self._live[task_id]
                expired.append(live)
        for live in expired:
            live.outbox.abort()

    # --- tasks/* ---------------------------------------------------------------------------------
    def _visible(self, task_id: Any, ctx: Context) -> TaskRecord:
        """The caller's own task, or the -32602 every other id gets."""
        if not _declares(ctx):
            raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                           "Client did not declare the io.modelcontextprotocol/tasks extension",
                           tasks_required_data())
        if not isinstance(task_id, str):
            raise MCPError(INVALID_PARAMS, "params.taskId must be a string")
        self._sweep()
        caller = _owner(ctx.request_context)
        try:
            with _reachable():
                record = self.store.get(task_id)
        except TaskExpired as expired:
            if expired.owner != caller:
                raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found") from None
            raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task has expired") from None
        except TaskNotFound:
            record = None
        if record is None or record.owner != caller:
            raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        with _reachable():
            return self._unless_orphaned(record)

    def _unless_orphaned(self, record: TaskRecord) -> TaskRecord:
        """``record``, or the same task failed when the process holding its body stopped beating."""
        if record.terminal or self.channel.heartbeat is None or self._here(record) \
                or str(record.runner).startswith(EXECUTOR_RUNNER) or self.channel.alive(str(record.runner)):
            return record
        message = ("The server process running this task stopped (no heartbeat within "
                   f"{self.channel.heartbeat:g} s); start the task again")
        ended = self._finish(record.task_id, "failed", error={"code": INTERNAL_ERROR, "message": message},
                             message=message)
        return ended if ended is not None else self.store.get(record.task_id)

    def get(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return detailed(self._visible(params.get("taskId"), ctx))

    def update(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        record = self._visible(params.get("taskId"), ctx)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict) or not all(isinstance(value, dict) for value in responses.values()):
            raise MCPError(INVALID_PARAMS, "inputResponses must be an object mapping each key to a result object")
        given = {key: {"d": digest(request), "r": validated_answer(request.get("method", ""), key, responses[key])}
                 for key, request in record.input_requests.items() if key in responses}
        executor = self._executor_of(record)
        resumed = False

        def change(current: TaskRecord) -> TaskRecord | None:
            nonlocal resumed
            answered = {key: value for key, value in given.items() if key in current.input_requests}
            if current.status != "input_required" or not answered:
                return None
            pending = {key: value for key, value in current.input_requests.items() if key not in answered}
            resumed = not pending
            return current.changed(status="input_required" if pending else "working", input_requests=pending,
                                   answers={**current.answers, **answered})

        with _reachable():
            self._publish(self.store.update(record.task_id, change))
        if resumed and executor is not None:
            self._run_on_executor(record.task_id, executor)
        elif resumed and self._here(record):
            self._resume(record.task_id, on_request=True)
        elif resumed:
            self.channel.tell(str(record.runner), "resume", record.task_id)
        return {"resultType": "complete"}

    def cancel(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        record = self._visible(params.get("taskId"), ctx)
        with _reachable():
            self._finish(record.task_id, "cancelled", message="Cancelled by the client")
        if str(record.runner).startswith(EXECUTOR_RUNNER):  # its body also reads the record, and stops
            if self.executor is not None:
                self.executor.revoke(record.task_id)
        elif self._here(record):
            self._stop(record.task_id)
        else:
            self.channel.tell(str(record.runner), "cancel", record.task_id)
        return {"resultType": "complete"}

    def listen_filter(self, notifications: Any, ctx: Context) -> dict[str, Any] | None:
        """The ``taskIds`` part of a ``subscriptions/listen`` filter this server honours: the caller's own tasks."""
        wanted = notifications.get("taskIds") if isinstance(notifications, dict) else None
        if wanted is None:
            return None
        if not isinstance(wanted, list) or not all(isinstance(task_id, str) for task_id in wanted):
            raise MCPError(INVALID_PARAMS, "notifications.taskIds must be a list of task ids")
        if not _declares(ctx):
            raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                           "Client did not declare the io.modelcontextprotocol/tasks extension",
                           tasks_required_data())
        owner = _owner(ctx.request_context)
        self.channel.listen()  # the status of a task held by another process arrives over the channel
        honoured = []
        for task_id in wanted:
            try:
                with _reachable():
                    if self.store.get(task_id).owner == owner:
                        honoured.append(task_id)
            except TaskNotFound:
                continue
        return {"taskIds": honoured}

    def close(self) -> None:
        """Flag every unfinished body as cancelled and let the idle workers go."""
        with self._lock:
            held, self._live = list(self._live.values()), OrderedDict()
            self._queue.clear()
            self._active.clear()
            self._again.clear()
        for live in held:
            live.outbox.abort()
        self.channel.close()
        self.pool.close()


@contextmanager
def _reachable() -> Iterator[None]:
    """A shared store or channel out of reach, answered as a -32603 to retry (never "not found")."""
    try:
        yield
    except TaskStoreUnavailable as down:
        raise MCPError(INTERNAL_ERROR, f"{down}; try again") from None


def _declares(ctx: Context) -> bool:
    """Whether this request declared the extension: in its session's capabilities, or in its own ``_meta``."""
    rc = ctx.request_context
    if declares_tasks(rc.session.client_capabilities):
        return True
    meta = rc.meta or {}
    return declares_tasks(meta.get(META_CLIENT_CAPABILITIES) or {})


def _owner(rc: ServerRequestContext[Any, Any]) -> str | None:
    """The principal a task belongs to (``core/shares.py``): its user, else its legacy session,
    else its client address; so an anonymous caller's task is also bound to who created it."""
    return principal_of(rc.transport, rc.session.connection)
