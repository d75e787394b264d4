"""Legacy sessions that every process serves: the record in a shared backend, a replica per process.

With a shared backend (``backend="redis://..."``) no process owns a session. Its record (principal,
version, client declarations, log level, resource subscriptions, whether the handshake finished)
lives in the backend and expires after the idle timeout; each process that gets a request of the
session builds a ``Connection`` from the record (its replica) and keeps it while it has use for it.

What one process cannot do alone travels on the backend's channel, to every process, and the one
holding what it is for takes it:

- ``answer``: a client's answer to a server-to-client request, for the worker waiting on it;
- ``cancel``: ``notifications/cancelled``, for the worker running the call;
- ``notify``: a notification for the session's standalone GET stream, wherever it is open;
- ``changed``: the record changed (``logging/setLevel``, ``resources/subscribe``, the handshake's
  end): replicas read it again;
- ``closed``: DELETE on any process (or expiry noticed by one): every replica closes, and the
  workers waiting on the client wake with "Connection closed".

A session id is 128 random bits and the backend's epoch (``SessionStore.store_epoch``), so that a
session the backend lost with its data (restarted without persistence, flushed) is told apart from
one that ended or expired: its client hears that its record is gone from the shared backend.

Server-to-client request ids come from the backend, so two processes never ask with the same id;
each is registered there as awaiting its answer, and an answer is taken (on whichever process it
comes to) only for such a question, once: an answer to nothing is refused, never kept.
Every message names the session's principal; a replica of another principal's session ignores it
(the HTTP edge has already checked the caller against the record on the hop it arrived on).
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from typing import TYPE_CHECKING, Any

from minimcp import jsonrpc
from minimcp.jsonrpc import Message
from minimcp.server.core.faults import BackendFault
from minimcp.server.core.outbox import EventLog, LogEntry
from minimcp.server.core.retention import STREAM_TTL
from minimcp.server.core.session_manager import SessionManager
from minimcp.server.core.sessions import Connection
from minimcp.server.core.shares import session_principal
from minimcp.server.core.workers import Lock, monotonic
from minimcp.types import INTERNAL_ERROR, ClientCapabilities, Implementation, RequestId

if TYPE_CHECKING:
    from minimcp.server.core.ports import SessionStore
    from minimcp.server.core.dispatch import Dispatcher

logger = logging.getLogger("minimcp.server.session")

#: How long an answer is kept for a worker whose process lost the channel when it was sent.
KEEP_ANSWERS = 120.0
#: The longest a reader of another process's stream waits before it looks at that process's
#: heartbeat again: with the heartbeat's TTL, it bounds how long a killed process's call hangs.
LIVENESS_RECHECK = 0.5


def record_of(connection: Connection) -> dict[str, Any]:
    """What every process needs to serve ``connection``, in JSON form."""
    return {
        "p": connection.principal,
        "v": connection.protocol_version,
        "caps": connection.client_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
        "info": connection.client_info.model_dump(mode="json", by_alias=True, exclude_none=True)
        if connection.client_info is not None else None,
        "lvl": connection.log_level,
        "subs": sorted(connection.subscriptions),
        "init": connection.initialized,
    }


def _apply(connection: Connection, record: dict[str, Any]) -> None:
    """Bring a replica up to date with the record."""
    connection.principal = record.get("p")
    connection.protocol_version = record.get("v", connection.protocol_version)
    connection.client_capabilities = ClientCapabilities.model_validate(record.get("caps") or {})
    info = record.get("info")
    connection.client_info = Implementation.model_validate(info) if isinstance(info, dict) else None
    connection.log_level = record.get("lvl")
    connection.subscriptions = set(record.get("subs") or ())
    connection.initialized = bool(record.get("init"))


class _Elsewhere:
    """One replica's way to the other processes: ``tell`` puts a message on the backend's channel.

    Its questions are registered in the backend as they are asked (``ask``), so that an answer that
    comes to any process is taken there once, for a question that awaits it (``answer``): an answer
    to nothing is refused before it is kept or relayed anywhere.
    """

    def __init__(self, backend: SessionStore, connection: Connection, idle_timeout: float) -> None:
        self.backend = backend
        self.session = connection
        self.idle_timeout = idle_timeout

    def ask(self) -> RequestId:
        """The id of a question about to be asked, registered as awaiting its answer."""
        assert self.session.id is not None
        request_id = self.backend.open_question(self.session.id)
        if request_id is None:  # the session ended on another process (or expired)
            raise jsonrpc.connection_closed()
        return request_id

    def ended(self, request_id: RequestId) -> None:
        """The question ended unanswered: a late answer is taken and dropped, on any process."""
        assert self.session.id is not None
        try:
            self.backend.end_question(self.session.id, request_id, self.idle_timeout)
        except BackendFault:  # it stays registered until the session ends; its worker goes on
            logger.warning("could not mark question %r of session %s ended", request_id, self.session.id)

    def answer(self, message: Message) -> bool:
        """Take the client's answer for its question: for the worker waiting here, else for the
        process that asked; whether a question of the session took it."""
        assert self.session.id is not None
        taken = self.backend.take_question(self.session.id, message["id"])
        if taken == "waiting" and not self.session.pending.answer(message):
            self.tell("answer", {"m": message}, keep=True)
        return taken is not None

    def tell(self, kind: str, body: dict[str, Any], keep: bool = False) -> None:
        assert self.session.id is not None
        if keep:
            self.backend.keep_answer(self.session.id, body["m"], KEEP_ANSWERS)
        self.backend.send(kind, self.session.id, {**body, "p": self.session.principal})


class SharedEventLog(EventLog):
    """An ``EventLog`` that, once its answer became a stream (``share``), also keeps every event in
    the backend (for ``STREAM_TTL`` seconds), so a client resuming on another process reads it there.

    ``_mirror_lock`` keeps appends and their copies in one order: the backend takes a stream's
    events only in ascending order. A copy that fails is logged; the live stream and the call go on.
    """

    def __init__(self, stream_id: str | None, backend: SessionStore, session_id: str, request_id: RequestId,
                 can_request: bool = True) -> None:
        super().__init__(stream_id, can_request)
        self._backend = backend
        self._session_id = session_id
        self._origin = {"proc": backend.process_id(), "req": request_id}
        self._mirror_lock = Lock()
        self._shared = False  # under _mirror_lock

    def _mirror(self, seq: int, message: Message | None, final: bool) -> None:
        try:
            self._backend.append_event(self._session_id, self.stream_id, seq, message, final, self._origin,
                                       STREAM_TTL)
        except BackendFault:
            logger.warning("event %d of stream %s is resumable on this process only", seq, self.stream_id)

    def _append(self, message: Message | None, final: bool) -> None:
        with self._mirror_lock:
            super()._append(message, final)
            if self._shared:
                self._mirror(self.last, message, final)

    def share(self) -> None:
        with self._mirror_lock:
            if self._shared:
                return
            self._shared = True
            for entry in self.entries():
                self._mirror(entry.seq, entry.message, entry.final)


class RemoteLog:
    """A resumable stream another process sends, read from the backend: the reader side of an
    ``EventLog`` (``read``, ``exhausted``, ``event_id``, ``last``), which the HTTP edge replays.

    While the stream is silent the sending process's heartbeat is checked every ``LIVENESS_RECHECK``
    seconds; once it stopped (killed mid-call) the stream ends with an error for the request, so the
    client's call fails within the heartbeat's TTL and a recheck instead of waiting for an answer
    that will not come. One reader (the resumed response's
    generator, on one thread) owns it, so it holds no lock.
    """

    def __init__(self, backend: SessionStore, session_id: str, stream_id: str, last: int,
                 origin: dict[str, Any]) -> None:
        self._backend = backend
        self._session_id = session_id
        self.stream_id = stream_id
        self.last = last
        self._origin = origin
        self._final: int | None = None
        self._ahead: deque[LogEntry] = deque()  # read from the backend, not yet handed out

    def read(self, after: int, timeout: float) -> LogEntry | None:
        while self._ahead and self._ahead[0].seq <= after:
            self._ahead.popleft()
        deadline = monotonic() + timeout
        while not self._ahead and self._final is None:
            wait = min(max(0.0, deadline - monotonic()), LIVENESS_RECHECK)
            for seq, message, final in self._backend.read_events(self._session_id, self.stream_id, after, wait):
                self._note(LogEntry(seq, message, final))
            if not self._ahead and not self._backend.process_alive(str(self._origin.get("proc"))):
                self._note(LogEntry(max(after, self.last) + 1, jsonrpc.error(
                    self._origin.get("req"), INTERNAL_ERROR,
                    "The server process running this request stopped before it answered; its outcome is "
                    "unknown: call again"), True))
            if monotonic() >= deadline:
                break
        return self._ahead.popleft() if self._ahead else None

    def _note(self, entry: LogEntry) -> None:
        self._ahead.append(entry)
        self.last = max(self.last, entry.seq)
        if entry.final:
            self._final = entry.seq

    def exhausted(self, after: int) -> bool:
        return self._final is not None and after >= self._final

    def event_id(self, seq: int) -> str:
        return f"{self.stream_id}:{seq}"

    def abort(self) -> None:
        """A resumed reader went away: the call runs on where it runs, and may be resumed again."""


class SharedSessionManager(SessionManager):
    """``SessionManager`` over a shared backend: any process serves any request of any session.

    The expiry rule is the memory manager's: the backend's key expires ``idle_timeout`` after the
    session's last request, and a process whose worker still computes for the session renews it on
    each sweep; a replica with nothing in flight is forgotten after ``idle_timeout`` without use.
    """

    def __init__(self, backend: SessionStore, dispatcher: Dispatcher, idle_timeout: float, max_sessions: int,
                 max_pending_per_session: int) -> None:
        super().__init__(idle_timeout, max_sessions, max_pending_per_session)
        self.backend = backend
        self.dispatcher = dispatcher
        # _records (guarded by the inherited _lock): the record each replica was last saved or read as.
        self._records: dict[str, dict[str, Any]] = {}
        self._stop_listening = backend.listen(self._heard)

    # --- the replicas -------------------------------------------------------------------------
    def _adopt(self, connection: Connection, session_id: str, record: dict[str, Any]) -> None:
        """Make ``connection`` this process's replica of ``session_id``; under ``_lock``."""
        connection.id = session_id
        connection.pending.limit = self.max_pending_per_session
        elsewhere = connection.elsewhere = _Elsewhere(self.backend, connection, self.idle_timeout)
        connection.pending.new_id = elsewhere.ask
        connection.pending.ended = elsewhere.ended
        connection.share_principal = session_principal(connection)
        self._sessions[session_id] = connection
        self._records[session_id] = record

    def add(self, connection: Connection) -> str | None:
        """Register a session ``initialize`` opened: its record goes to the backend under a fresh id."""
        self.sweep(force=len(self._sessions) >= self.max_sessions)
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                return None
        epoch = self.backend.store_epoch()
        session_id = f"{secrets.token_hex(16)}-{epoch}" if epoch else secrets.token_hex(16)
        record = record_of(connection)
        self.backend.save_session(session_id, record, self.idle_timeout)
        with self._lock:
            self._adopt(connection, session_id, record)
        return session_id

    def get(self, session_id: str) -> Connection | None:
        """This process's replica of the live session, brought up to date; ``None`` when it ended."""
        self.sweep()
        record = self.backend.load_session(session_id, self.idle_timeout)  # renews its expiry
        if record is None:
            with self._lock:
                ended = self._sessions.pop(session_id, None)
                self._records.pop(session_id, None)
            if ended is not None:
                ended.close()
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                session = self.dispatcher.new_legacy_connection()
                _apply(session, record)
                self._adopt(session, session_id, record)
            elif record != self._records.get(session_id):
                _apply(session, record)
                self._records[session_id] = record
        session.last_seen = monotonic()
        return session

    def minted_elsewhere(self, session_id: str) -> bool:
        """Never: every process of the deployment serves every session the backend holds."""
        return False

    def lost_with_backend(self, session_id: str) -> bool:
        """Whether the session, unknown to the backend, was minted under an epoch the backend no
        longer holds: it was lost with the backend's data, not ended or expired."""
        _, dash, epoch = session_id.rpartition("-")
        return bool(dash) and self.backend.epoch_lost(epoch)

    def event_log(self, connection: Connection, can_request: bool, request_id: RequestId) -> EventLog:
        assert connection.id is not None
        return SharedEventLog(None, self.backend, connection.id, request_id, can_request)

    def remote_stream(self, connection: Connection, stream_id: str) -> RemoteLog | None:
        """The stream ``stream_id`` of ``connection`` as another process keeps sending it, or ``None``
        when the backend has no such stream for this session (a session reads only its own)."""
        assert connection.id is not None
        last = self.backend.last_event(connection.id, stream_id)
        return None if last is None else RemoteLog(self.backend, connection.id, stream_id, *last)

    def save(self, connection: Connection) -> None:
        """Store what a request changed in the session's record and tell the other replicas."""
        if connection.id is None:
            return
        record = record_of(connection)
        with self._lock:
            if self._records.get(connection.id) == record:
                return
            self._records[connection.id] = record
        self.backend.save_session(connection.id, record, self.idle_timeout)
        self.backend.send("changed", connection.id, {})

    def remove(self, session_id: str) -> bool:
        """End the session for every process (DELETE); whether it existed."""
        existed = self.backend.delete_session(session_id)  # every replica hears "closed"
        self._forget(session_id)
        return existed

    def _forget(self, session_id: str) -> bool:
        with self._lock:
            session = self._sessions.pop(session_id, None)
            self._records.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def sweep(self, force: bool = False) -> None:
        """Renew the sessions a worker here computes for; forget replicas idle here, close those
        whose session ended elsewhere (expired: its waiting workers wake)."""
        now = monotonic()
        with self._lock:
            if not force and now < self._last_sweep + min(self.SWEEP_INTERVAL, self.idle_timeout / 4):
                return
            self._last_sweep = now
            replicas = list(self._sessions.items())
        try:
            self._check(replicas, now)
        except BackendFault:  # the next tick tries again; the requests meanwhile are answered 503 (or 500)
            logger.debug("could not sweep the shared sessions: the backend failed", exc_info=True)

    def _check(self, replicas: list[tuple[str, Connection]], now: float) -> None:
        for session_id, session in replicas:
            if session.working:
                self.backend.renew_session(session_id, self.idle_timeout)
            elif session.open_here:
                if not self.backend.session_alive(session_id):
                    self._forget(session_id)
                    continue
                self._collect(session_id, session)  # an answer the channel lost while it reconnected
            elif now - session.last_seen > self.idle_timeout:
                self._forget(session_id)

    def _collect(self, session_id: str, connection: Connection) -> None:
        """Hand the answers kept for this replica's waiting questions to their workers."""
        waiting = connection.pending.ids()
        for answer in self.backend.kept_answers(session_id, waiting) if waiting else ():
            connection.pending.answer(answer)

    def close(self) -> None:
        """This process stops serving: its replicas close, the sessions live on in the other processes."""
        self._forget_stop()
        self._stop_listening()
        with self._lock:
            sessions, self._sessions, self._records = list(self._sessions.values()), {}, {}
        for session in sessions:
            session.close()

    # --- what the other processes tell ----------------------------------------------------------
    def _heard(self, kind: str, session_id: str, body: dict[str, Any]) -> None:
        """One message of the backend's channel (on its relay thread): what this process holds takes it."""
        if kind == "resync":
            self._resync()
            return
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            return
        if kind == "closed":
            self._forget(session_id)
            return
        if body.get("p") != session.principal and kind != "changed":
            logger.warning("ignored a %s for session %s sent under another principal", kind, session_id)
            return
        if kind == "answer" and isinstance(body.get("m"), dict):
            if session.pending.answer(body["m"]):
                self.backend.kept_answers(session_id, [body["m"].get("id")])  # taken: no longer kept
        elif kind == "cancel" and body.get("id") is not None:
            outbox = session.channel(body["id"])
            if outbox is not None:
                outbox.cancel()
        elif kind == "notify" and isinstance(body.get("m"), dict):
            outbox = session.channel(None)
            if outbox is not None:
                outbox.send(body["m"])
        elif kind == "close_standalone":
            session.close_standalone_stream(here_only=True)
        elif kind == "progress":
            session.progress_heard(body.get("params"), here_only=True)
        elif kind == "changed":
            self._reread(session_id, session)

    def _resync(self) -> None:
        """The channel is back after a loss: collect the answers kept for the questions waiting here."""
        with self._lock:
            replicas = list(self._sessions.items())
        for session_id, session in replicas:
            try:
                self._collect(session_id, session)
            except BackendFault:
                logger.warning("could not collect the answers kept for session %s", session_id)

    def _reread(self, session_id: str, connection: Connection) -> None:
        """Bring a replica up to date after another process changed the record: a resource update
        or a log message for its standalone stream must follow the new subscriptions and level."""
        try:
            record = self.backend.load_session(session_id, self.idle_timeout)
        except Exception:  # unreachable now: the replica stays as it was until its next request
            logger.warning("could not read session %s again", session_id, exc_info=True)
            return
        if record is None:
            self._forget(session_id)
            return
        with self._lock:
            self._records[session_id] = record
        _apply(connection, record)
