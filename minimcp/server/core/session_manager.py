"""``SessionManager``: the legacy sessions of an HTTP endpoint, by ``Mcp-Session-Id``.

One process keeps its sessions here; a deployment of several shares them through a store
(``minimcp.server.core.shared_sessions.SharedSessionManager``, which follows the same rules).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from minimcp.jsonrpc import MCPError
from minimcp.server.core.outbox import EventLog
from minimcp.server.core.shares import session_principal
from minimcp.server.core.workers import Lock, monotonic
from minimcp.shared import process_stop
from minimcp.types import INTERNAL_ERROR, RequestId

if TYPE_CHECKING:
    from minimcp.server.core.sessions import Connection

__all__ = ["SessionManager"]

#: What a call whose question this process withdrew as it stopped answers its client.
PROCESS_STOPPING = ("The server process running this call is stopping (a restart, a reload or a scale-down), so "
                    "its question to you was withdrawn; call again")
#: The bytes of a session manager's ``instance`` tag, and the digits an id is written in.
_TAG_BYTES = 4
_HEX = frozenset("0123456789abcdef")


class SessionManager:
    """Legacy sessions by ``Mcp-Session-Id``; idle ones expire on a sweep, no timer thread.

    The expiry rule: a session expires when ``idle_timeout`` seconds have passed since its client
    last sent something or was last asked something, and none of its calls is running server code
    (time the server spends computing never counts against the client). A call blocked on a
    question the client never answers does not keep the session alive: expiry closes it, and its
    worker wakes with "Connection closed". Sweeps run when a session is added or looked up and on
    the keepalive tick of every open response stream (``sweep``), at most every ``SWEEP_INTERVAL``
    seconds. ``idle_timeout`` may be changed on a running app; the next sweep uses the new value.
    ``max_pending_per_session`` caps the server-to-client requests one session may have outstanding.

    A session id is 128 random bits and the ``instance`` tag of the manager that minted it
    (``<32 hex>-<8 hex>``): the tag is no secret and grants nothing, but it lets a process that
    does not know an id tell a session it forgot (its own tag) from one another process (or this
    server before a restart) minted (``minted_elsewhere``), which no process here can serve
    without a shared backend or sticky routing.
    """

    #: The longest pause between two sweeps; shorter when ``idle_timeout`` is short.
    SWEEP_INTERVAL = 5.0

    def __init__(self, idle_timeout: float, max_sessions: int, max_pending_per_session: int) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.max_pending_per_session = max_pending_per_session
        # _lock guards _sessions and _last_sweep.
        self._lock = Lock()
        self._sessions: dict[str, Connection] = {}
        self._last_sweep = 0.0
        #: What this manager's session ids end with (see the class text).
        self.instance = secrets.token_hex(_TAG_BYTES)
        self._forget_stop = process_stop.on_stop(self.stopping)

    def add(self, connection: Connection) -> str | None:
        """Register ``connection`` under a fresh id (128 random bits, tagged with ``instance``);
        ``None`` when the server is full."""
        self.sweep(force=len(self._sessions) >= self.max_sessions)
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                return None
            connection.id = f"{secrets.token_hex(16)}-{self.instance}"
            connection.pending.limit = self.max_pending_per_session
            connection.share_principal = session_principal(connection)
            self._sessions[connection.id] = connection
        return connection.id

    def get(self, session_id: str) -> Connection | None:
        """The live session with this id, renewed: a lookup means its client just sent something."""
        self.sweep()
        with self._lock:
            session = self._sessions.get(session_id)
        if session is not None and self._idle(session):
            self.remove(session_id)
            return None
        if session is not None:
            session.last_seen = monotonic()
        return session

    def minted_elsewhere(self, session_id: str) -> bool:
        """Whether ``session_id``, which this manager does not know, has the shape of an id another
        manager minted (another process, or this server before a restart), rather than one of its
        own that expired or was ended."""
        random, _, tag = session_id.rpartition("-")
        return (tag != self.instance and len(random) == 32 and len(tag) == 2 * _TAG_BYTES
                and all(c in _HEX for c in random + tag))

    def lost_with_backend(self, session_id: str) -> bool:
        """Whether ``session_id``, unknown here, was lost with a shared backend's data: never, for
        sessions kept in this process (``SharedSessionManager`` can tell)."""
        return False

    def sweep(self, force: bool = False) -> None:
        """Expire every idle session; without ``force``, only if the last sweep is old enough."""
        now = monotonic()
        with self._lock:
            # Spaced by the idle timeout as it is now, so shortening it on a running app takes effect
            # at the next tick instead of after a pause computed from the old value.
            if not force and now < self._last_sweep + min(self.SWEEP_INTERVAL, self.idle_timeout / 4):
                return
            self._last_sweep = now
            expired = [sid for sid, s in self._sessions.items() if self._idle(s)]
        for session_id in expired:
            self.remove(session_id)

    def event_log(self, connection: Connection, can_request: bool, request_id: RequestId) -> EventLog:
        """The log a resumable SSE answer (to ``request_id``) of ``connection`` is drained from."""
        return EventLog(None, can_request)

    def remote_stream(self, connection: Connection, stream_id: str) -> Any:
        """A stream of ``connection`` that another process sends (``SharedSessionManager``): none here,
        where every stream is in this process."""
        return None

    def save(self, connection: Connection) -> None:
        """Keep what a request changed in ``connection``: here the connection itself is the record
        (``SharedSessionManager`` stores it in a shared backend)."""

    def remove(self, session_id: str) -> bool:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def close(self) -> None:
        self._forget_stop()
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    def stopping(self) -> None:
        """This process stops serving (``minimcp.shared.process_stop``): each worker waiting on a
        client's answer wakes with ``PROCESS_STOPPING``, which its call answers the client with
        while the process still can, and each standalone GET stream here ends, its client opening
        it again (on another process of a shared backend); the sessions themselves live on."""
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            session.pending.withdraw(MCPError(INTERNAL_ERROR, PROCESS_STOPPING))
            session.close_standalone_stream(here_only=True)

    def __len__(self) -> int:
        return len(self._sessions)

    def _idle(self, connection: Connection) -> bool:
        # The clock first: a session looked up on every call is seldom idle that long.
        return monotonic() - connection.last_seen > self.idle_timeout and not connection.working
