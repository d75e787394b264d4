"""``Backend``: the one interface behind everything a server keeps between requests.

A server in one process keeps its state in memory (``MemoryBackend``, the default). A deployment
of several processes (``gunicorn -w 4``, or several machines behind a load balancer) shares it
through a backend whose ``shared`` is true (``RedisBackend``): the request-state keys and the
requestStates already used, the legacy sessions, the messages that must reach the process holding
a waiting worker or an open stream, and the subscription fan-out. The core asks the backend and
never knows which one it has; a backend that cannot be reached raises ``BackendUnavailable``, which
the HTTP edge answers 503 with ``Retry-After`` (never "Session not found", which makes a client
start over).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from minimcp.jsonrpc import MCPError
from minimcp.types import INTERNAL_ERROR, RequestId

if TYPE_CHECKING:
    from minimcp.server.app.subscriptions import SubscriptionBus
    from minimcp.server.app.tasks import TaskChannel, TaskStore

#: What travels between processes about one session: (kind, session id, body).
SessionListener = Callable[[str, str, dict[str, Any]], None]


class BackendUnavailable(MCPError):
    """The shared state cannot be reached right now; ``retry_after`` seconds is a fair wait.

    The message a client sees does not say where the state lives; the server log does (``what``)."""

    #: What the client reads; a 2026-07-28 answer carrying it travels with 503 and ``Retry-After``.
    MESSAGE = "The server's shared state is unreachable; retry shortly"

    def __init__(self, what: str, retry_after: int = 1) -> None:
        super().__init__(INTERNAL_ERROR, self.MESSAGE)
        self.what = what
        self.retry_after = retry_after


class Backend(ABC):
    """Where a server keeps what outlives one request, for one process or for many.

    ``shared`` says whether other processes see the same state; only then do sessions, questions
    and streams travel through it (a memory backend leaves every one of them where it is today).
    """

    shared: bool = False
    #: Seconds an HTTP client is told to wait (``Retry-After``) while the backend is unreachable.
    retry_after: int = 1

    # --- requestState (2026-07-28 rounds) -------------------------------------------------------
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

    # --- the subscription fan-out ---------------------------------------------------------------
    @abstractmethod
    def subscription_bus(self) -> SubscriptionBus:
        """The bus ``ctx.notify_*`` publishes on and every listen stream of every process hears."""

    # --- tasks ---------------------------------------------------------------------------------
    def task_store(self) -> TaskStore | None:
        """Where the tasks are kept; ``None``: the task manager's own store, in this process."""
        return None

    def task_channel(self) -> TaskChannel | None:
        """How the processes sharing the task store hear of each other's tasks (status, cancels,
        heartbeats); ``None``: one process, nothing to hear."""
        return None

    def named_for(self, server_name: str) -> None:
        """The server keeping its state here is called ``server_name``: a backend that names its
        keys and was given no prefix takes one from it, so that two differently named servers on
        one database never share state (and every process of one server finds the same)."""

    def close(self) -> None:
        """Release connections and threads; the backend may be used again afterwards."""


class SharedBackend(Backend):
    """A backend other processes see too (``RedisBackend``): legacy sessions, the questions their
    workers wait on and the streams they feed then travel through it, so any process serves any
    request of any session."""

    shared = True

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
