"""What a server needs from outside the core, declared here and implemented elsewhere.

What one request is comes through the ``Planner``: the core asks it once per request and hands
its ``Plan`` (``minimcp.server.core.plan``) down.

Whatever outlives one request lives behind one of these ports: the sealing key ring of
``requestState`` (``KeyRing``), the legacy sessions every process serves (``SessionStore``), the
change fan-out that ``subscriptions/listen`` streams hear (``SubscriptionBus``), and the tasks
(``TaskStore``, where they are kept, and ``TaskChannel``, how the processes sharing them hear of
each other). ``Stores`` is the bundle a server is given as ``backend=``: the core's own
``MemoryBackend`` (``minimcp.server.core.in_process``) for one process, or a backend of
``minimcp.server.backends`` (``RedisBackend``) that every process of a deployment shares.

The ports speak plain data (``TaskRecord``, JSON-able dicts, typed events) and raise the faults of
``minimcp.server.core.faults``, so that the core, the tier above it and the HTTP edge use them
without knowing which implementation they have.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from minimcp.server.core.plan import Plan
from minimcp.server.core.workers import wall_clock
from minimcp.shared.subscriptions import ServerEvent
from minimcp.shared.tasks import TERMINAL
from minimcp.types import RequestId

__all__ = ["EXECUTOR_RUNNER", "KINDS", "Change", "Deliver", "KeyRing", "Listener", "Planner", "SessionListener", "SessionStore",
           "Stores", "SubscriptionBus", "TaskChannel", "TaskExecutor", "TaskRecord", "TaskStore"]


# --- one request ----------------------------------------------------------------------------------
class Planner(Protocol):
    """The one question the core asks the tier above about a request: what is it?"""

    def plan(self, method: str, params: Any) -> Plan: ...


# --- requestState ---------------------------------------------------------------------------------
class KeyRing(Protocol):
    """The keys ``requestState`` is sealed with, and the record of the states already used."""

    @abstractmethod
    def request_state_keys(self, seed: Sequence[bytes] = ()) -> list[bytes]:
        """The sealing key ring, the one that seals first; the same for every process. Made on first
        use: from ``seed`` (the ring a process still holds when a restarted store lost it), else anew."""

    @abstractmethod
    def rotate_request_state_keys(self) -> None:
        """Start sealing with a new key; the previous ones still open the states they sealed."""

    @abstractmethod
    def spend_request_state(self, digest: str, ttl: float) -> bool:
        """Record that the state with this digest was used; ``False`` when it already was."""


# --- legacy sessions across processes -------------------------------------------------------------
#: What travels between processes about one session: (kind, session id, body).
SessionListener = Callable[[str, str, dict[str, Any]], None]


class SessionStore(Protocol):
    """The legacy sessions a deployment's processes share: each record, the questions their
    workers wait on, the events of their resumable streams, and a channel to every process, so
    any process serves any request of any session (``minimcp.server.core.shared_sessions``)."""

    @abstractmethod
    def save_session(self, session_id: str, record: dict[str, Any], ttl: float) -> None:
        """Store a session's record; it expires ``ttl`` seconds after its last use."""

    @abstractmethod
    def load_session(self, session_id: str, ttl: float) -> dict[str, Any] | None:
        """The record, its expiry renewed; ``None`` when the session ended or expired."""

    @abstractmethod
    def renew_session(self, session_id: str, ttl: float) -> bool:
        """Push a live session's expiry back (a call of it still computes); whether it is still there."""

    @abstractmethod
    def session_alive(self, session_id: str) -> bool:
        """Whether the session is still there (without renewing it)."""

    @abstractmethod
    def delete_session(self, session_id: str) -> bool:
        """End the session for every process; whether it existed."""

    def store_epoch(self) -> str:
        """The name of what the store holds now, which the ids of the sessions minted now carry:
        made on first use, and anew once the store lost its data (restarted without persistence,
        flushed). A store that cannot tell answers ``""``."""
        return ""

    def epoch_lost(self, epoch: str) -> bool:
        """Whether ``epoch`` names what this store held before it lost its data: a session minted
        under it was lost with the data rather than ended, and its client is told so. An epoch of
        another store (another server's keys on one database) is not."""
        return False

    @abstractmethod
    def open_question(self, session_id: str) -> int | None:
        """A server-to-client request id no process of this deployment has used in the session,
        registered as awaiting its answer; ``None`` when the session ended."""

    @abstractmethod
    def take_question(self, session_id: str, request_id: RequestId) -> Literal["waiting", "ended"] | None:
        """Take the session's question ``request_id`` for the answer that came, in one step, once:
        ``"waiting"`` (its worker is to have it), ``"ended"`` (it ended unanswered: the answer is
        late, and dropped) or ``None`` (no such question, or answered already)."""

    @abstractmethod
    def end_question(self, session_id: str, request_id: RequestId, ttl: float) -> None:
        """The question ended unanswered: its late answer is still taken (and dropped) for ``ttl``
        seconds, among the last few of the session's."""

    @abstractmethod
    def append_event(self, session_id: str, stream_id: str, seq: int, message: dict[str, Any] | None,
                     final: bool, origin: dict[str, Any], ttl: float) -> None:
        """Keep event ``seq`` of one of the session's resumable streams for ``ttl`` seconds;
        ``origin`` says which process sends it and for which request."""

    @abstractmethod
    def read_events(self, session_id: str, stream_id: str, after: int,
                    timeout: float) -> list[tuple[int, dict[str, Any] | None, bool]]:
        """The events of the stream after ``after``, as ``(seq, message, final)``; waits up to
        ``timeout`` seconds for one when there is none yet (a stream still running elsewhere)."""

    @abstractmethod
    def last_event(self, session_id: str, stream_id: str) -> tuple[int, dict[str, Any]] | None:
        """The newest event's ``seq`` of the session's stream and its ``origin``; ``None`` when the
        session has no such stream (or it expired)."""

    @abstractmethod
    def process_id(self) -> str:
        """This process's name in the deployment, kept alive by a heartbeat while it runs."""

    @abstractmethod
    def process_alive(self, process_id: str) -> bool:
        """Whether the process ``process_id`` still beats (a killed one stops within seconds)."""

    @abstractmethod
    def send(self, kind: str, session_id: str, body: dict[str, Any]) -> None:
        """Tell every process something about a session (an answer, a cancel, a notification, its end).

        Only the processes listening now hear it. A listener that lost the channel a while hears
        ``("resync", "", {})`` once it is back, and reads the answers it may have missed
        (``kept_answers``)."""

    @abstractmethod
    def keep_answer(self, session_id: str, message: dict[str, Any], ttl: float) -> None:
        """Keep a client's answer for ``ttl`` seconds, for a worker whose process missed its ``send``
        (an answer whose question was taken for it: one per question, of bounded size)."""

    @abstractmethod
    def kept_answers(self, session_id: str, request_ids: list[Any]) -> list[dict[str, Any]]:
        """The kept answers to these requests of the session (each handed out once)."""

    @abstractmethod
    def listen(self, listener: SessionListener) -> Callable[[], None]:
        """Hear what ``send`` tells, from every process; returns the way to stop."""


# --- the subscription fan-out ---------------------------------------------------------------------
Listener = Callable[[ServerEvent], None]


class SubscriptionBus(Protocol):
    """Where changes are published and where open streams hear about them.

    ``publish`` may do network I/O (a backend's bus forwards the event); it runs on the publishing
    handler's worker thread. ``subscribe`` registers a local listener and returns an idempotent
    way to stop. Listeners are plain functions that must not block and must not raise; they may be
    called from any thread. One bus may serve several servers.
    """

    def publish(self, event: ServerEvent) -> None:
        """Deliver ``event`` to every subscribed listener."""

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Register ``listener``; the returned function unregisters it (calling it twice is fine)."""


# --- tasks ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskRecord:
    """One task as a client observes it. Frozen: a change is a new record, stored atomically.

    ``owner`` is the principal the task belongs to, as ``minimcp.server.core.shares`` keys it
    (``user:<subject>``, else ``session:<legacy session id>``, else ``address:<client address>``;
    ``None`` on a one-client transport such as stdio). ``expires_at`` is wall-clock seconds. ``answers`` maps each input
    request key to ``{"d": digest of the question, "r": the client's answer}``; ``state`` is the
    ``requestState`` a hand-built ``InputRequiredResult`` carried into the next run. ``runner`` is
    the ``TaskChannel.process_id`` of the process holding the body (``None``: this process), or
    the ``TaskExecutor.runner`` whose workers run it; then ``job`` is what any process needs to run
    it (``minimcp.server.app.tasks.jobs``), as JSON, since no process holds it.
    """

    task_id: str
    owner: str | None
    status: str
    created_at: float
    updated_at: float
    ttl_ms: int
    expires_at: float
    poll_interval_ms: int
    status_message: str | None = None
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    runner: str | None = None
    job: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def changed(self, **changes: Any) -> TaskRecord:
        """This record with ``changes`` and a fresh ``updated_at``."""
        return dataclasses.replace(self, updated_at=wall_clock(), **changes)


Change = Callable[[TaskRecord], "TaskRecord | None"]


@runtime_checkable
class TaskStore(Protocol):
    """Where tasks are kept: what a client can observe of each (``TaskRecord``), as plain data.

    Every store follows three rules: ``create`` refuses past the limits, ``get`` says ``TaskExpired``
    (naming the owner) or ``TaskNotFound``, ``update`` is an atomic read-modify-write. A shared store
    that cannot be reached raises ``TaskStoreUnavailable``, which a client hears as a -32603 to
    retry, never as "not found".

    The limits' rule: **every record counts against its owner until it expires**, finished or not.
    A finished task still occupies the store for its TTL, so if finishing freed the owner's place,
    one caller could churn through quick tasks until the store's total was full for everyone.
    """

    @abstractmethod
    def create(self, record: TaskRecord) -> None:
        """Keep ``record``; raise ``TaskLimitReached`` when the store or its owner is full.

        Full means: the store holds its maximum of records, or ``record.owner`` holds its maximum.
        Every record counts, finished or not, until its TTL elapses and the store drops it; an owner
        of ``None`` (a one-client transport) is bound by the total only. Keep the owner's maximum a
        small part of the total, so that one owner at its maximum leaves room for the others. Must
        be durable when it returns: a ``get`` that follows, from any process, finds it."""

    @abstractmethod
    def get(self, task_id: str) -> TaskRecord:
        """The record; ``TaskExpired`` (naming the owner) when its TTL elapsed, ``TaskNotFound`` when unknown."""

    @abstractmethod
    def update(self, task_id: str, change: Change) -> TaskRecord | None:
        """Apply ``change`` to the current record atomically and keep what it returns.

        ``change`` returns ``None`` to leave the record as it is. The answer is the record as
        stored afterwards (``None`` when ``change`` declined, or the task is gone or expired).
        ``change`` must be pure: an optimistic store calls it again when another writer won.
        """


#: ``deliver(kind, task_id, params)``: ``kind`` is ``"status"`` (``params``: the notification's),
#: ``"cancel"`` or ``"resume"`` (``params`` ``None``).
Deliver = Callable[[str, str, "dict[str, Any] | None"], None]

#: The message kinds a task channel carries.
KINDS = frozenset({"status", "cancel", "resume"})


@runtime_checkable
class TaskChannel(Protocol):
    """How the processes serving one set of tasks reach each other.

    A task's body runs in the process that created it, but its ``tasks/*`` requests may arrive at any
    process sharing the store. Three things must travel between them, and nothing else:

    - a status change (``notifications/tasks``) is announced to every process, each of which hands it
      to its own ``subscriptions/listen`` streams;
    - a cancellation or a resumption (every question answered) is told to the process holding the body
      (``TaskRecord.runner``), which sets the body's cancel flag or runs it again;
    - each process says it is alive, so a reader finding a task held by a silent process fails it
      instead of leaving it ``working`` forever.

    Messages are hints: the store stays the truth. A shared channel also calls its ``tick`` a few
    times per ``heartbeat``, on which the manager re-reads the tasks it holds and catches up with any
    cancellation or resumption whose message was lost.
    """

    #: Seconds a silent process is still taken for alive; ``None``: no other process shares the
    #: channel, and there is no heartbeat to heed.
    heartbeat: float | None = None

    @abstractmethod
    def attach(self, deliver: Deliver, tick: Callable[[], None]) -> None:
        """Where this process's messages go; called once by the ``TaskManager`` it serves. Starts nothing."""

    @property
    @abstractmethod
    def process_id(self) -> str:
        """This process's name on the channel (a shared channel starts hearing messages on first use)."""

    def listen(self) -> None:
        """Hear this process's messages from now on (idempotent): before a listen stream counts on them."""
        self.process_id  # noqa: B018 - a shared channel starts its listener on first use

    @abstractmethod
    def announce(self, task_id: str, params: dict[str, Any]) -> None:
        """Deliver a status notification to every process; a lost one is logged, never raised."""

    @abstractmethod
    def tell(self, process_id: str, kind: str, task_id: str) -> None:
        """Deliver ``kind`` (``"cancel"`` or ``"resume"``) to the process holding the body."""

    @abstractmethod
    def alive(self, process_id: str) -> bool:
        """Whether ``process_id`` has been heard from within the heartbeat bound."""

    def close(self) -> None:
        """Stop hearing messages in this process (a later use starts again)."""
        return None


#: How a ``TaskRecord.runner`` names a task executor rather than a process: ``executor:<name>``.
EXECUTOR_RUNNER = "executor:"


@runtime_checkable
class TaskExecutor(Protocol):
    """Where task bodies run when not on the threads of the process that created them.

    The default is none: a body runs on its ``TaskManager``'s own worker pool, and dies with its
    process. An executor (``CeleryExecutor``) hands each run to workers of its own instead; the
    record says so (``runner``: ``EXECUTOR_RUNNER`` + ``name``) and carries the job, so any web
    process answers ``tasks/*`` for it, a restart of the process that created it costs nothing, and
    no heartbeat of a web process decides whether it is alive. The executor's worker runs the body
    with ``TaskManager.run_recorded`` against the same store.
    """

    #: The executor's name in ``TaskRecord.runner`` (after ``EXECUTOR_RUNNER``).
    name: str

    @abstractmethod
    def submit(self, task_id: str) -> None:
        """Queue one run of the task's body (it reads everything else from the store); raise
        ``TaskStoreUnavailable`` when the queue cannot be reached, so the client hears "try again"."""

    @abstractmethod
    def revoke(self, task_id: str) -> None:
        """Stop the task's queued or running body, as far as the executor can (its record is
        ``cancelled`` already, which a running body sees as ``ctx.cancelled``); a lost revocation is
        logged, never raised."""


# --- the bundle -----------------------------------------------------------------------------------
@runtime_checkable
class Stores(KeyRing, Protocol):
    """Where a server keeps what outlives one request (``backend=``): the key ring it is, the bus,
    and the tasks' store and channel.

    ``shared`` says whether other processes see the same state; only then is it a ``SessionStore``
    too, and do sessions, questions and streams travel through it (``retry_after``: the seconds an
    HTTP client is told to wait while it is unreachable).
    """

    shared: bool
    retry_after: int

    def subscription_bus(self) -> SubscriptionBus:
        """The bus ``ctx.notify_*`` publishes on and every listen stream of every process hears."""

    def task_store(self) -> TaskStore | None:
        """Where the tasks are kept; ``None``: the task manager's own store, in this process."""

    def task_channel(self) -> TaskChannel | None:
        """How the processes sharing the task store hear of each other's tasks; ``None``: one
        process, nothing to hear."""

    def named_for(self, server_name: str) -> None:
        """The server keeping its state here is called ``server_name`` (a backend that names its keys
        and was given no prefix takes one from it)."""

    def close(self) -> None:
        """Release connections and threads; the stores may be used again afterwards."""
