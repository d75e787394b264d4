"""Fair shares: who a principal is, and how much of a bounded resource one principal may hold.

Every bounded resource of a server (worker threads for calls, outstanding legacy questions, task
workers, open listens, stored tasks) has a total cap, and each principal may hold only a share of
it, so that one caller at its full share still leaves room for the others. A request over its
principal's share is refused at once, with a message that names the limit; only the total cap
ever makes a request wait (and that wait is bounded).

A **principal** is, in this order:

1. the authenticated subject (``TransportContext.principal``: ``REMOTE_USER``, a bearer token's
   holder, a host's logged-in user): one user is one principal across all their sessions and
   addresses;
2. else the legacy session (``Mcp-Session-Id``): an anonymous client is its session;
3. else the client's network address (an anonymous 2026-07-28 request has no session): every
   anonymous caller behind one proxy or NAT is one principal, so a server behind a reverse proxy
   gives a principal hook that reads the proxy's client header;
4. else nobody: a transport with one client (stdio, in memory) shares with no one, and only the
   total caps apply.

The keys are namespaced (``user:``, ``session:``, ``address:``), so no user id can pass for an
anonymous caller's session or address. A rate limit counts an anonymous session's requests against
its address too (``principals_of``): a session is free to open, an address is not. This module is
the one home of that rule and of the counting; the pool, the sessions, the listens and the tasks each hold a ``Shares``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from minimcp.jsonrpc import MCPError
from minimcp.server.core.workers import Lock
from minimcp.types import INTERNAL_ERROR

if TYPE_CHECKING:
    from minimcp.shared.transport_context import TransportContext


class Session(Protocol):
    """What the principal rules read of a connection (``Connection``): its legacy session's id and
    the user that opened it."""

    @property
    def id(self) -> str | None: ...

    @property
    def principal(self) -> str | None: ...


def principal_key(subject: str | None, session_id: str | None, address: str | None) -> str | None:
    """The key one principal's holdings are counted under: its subject, session or address."""
    if subject is not None:
        return "user:" + subject
    if session_id is not None:
        return "session:" + session_id
    if address is not None:
        return "address:" + address
    return None


def principal_of(transport: TransportContext, connection: Session) -> str | None:
    """The principal a request counts against: how it arrived, and the legacy session it belongs to.

    A transport that names no client address (stdio, in memory, a direct call) serves one client.
    """
    if transport.client_address is None:
        return None
    return principal_key(transport.principal, connection.id, transport.client_address)


def principals_of(transport: TransportContext, connection: Session) -> tuple[str, ...]:
    """Every principal a request counts against when each must stay under one limit (a rate):
    the user; else the legacy session *and* the client's address, so that a client opening a fresh
    session for every request is still one caller; else the address. None on a transport with a
    single client."""
    if transport.client_address is None:
        return ()
    if transport.principal is not None:
        keys = [principal_key(transport.principal, None, None)]
    else:
        keys = [principal_key(None, connection.id, None), principal_key(None, None, transport.client_address)]
    return tuple(key for key in keys if key is not None)


def session_principal(connection: Session) -> str | None:
    """The principal a legacy session's questions count against: its user, else the session. For
    the HTTP edge's ``SessionManager``, which keeps the sessions of many clients."""
    return principal_key(connection.principal, connection.id, None)


def fair_share(total: int, parts: int) -> int:
    """The default share of a resource of ``total``: room for at least ``parts`` principals at
    their full share."""
    return max(1, total // parts)


class Shares:
    """How many of one resource each principal holds, against ``limit`` per principal.

    ``refusal`` is the error text of a take over the limit; ``{limit}`` in it is replaced by the
    limit. ``limit`` may be changed while serving: the next take obeys the new value.
    """

    def __init__(self, limit: int, refusal: str) -> None:
        if limit < 1:
            raise ValueError(f"a per-principal limit must be at least 1, got {limit}")
        self.limit = limit
        self.refusal = refusal
        # _lock guards _held (principal -> how many it holds; a principal holding none is absent).
        self._lock = Lock()
        self._held: dict[str, int] = {}

    def try_take(self, principal: str | None) -> bool:
        """Count one more for ``principal`` if it is under its share; ``None`` always may."""
        if principal is None:
            return True
        with self._lock:
            held = self._held.get(principal, 0)
            if held >= self.limit:
                return False
            self._held[principal] = held + 1
            return True

    def admit(self, transport: TransportContext, connection: Session) -> str | None:
        """``take`` for the principal a request counts against (``principal_of``), which it answers."""
        principal = principal_of(transport, connection)
        self.take(principal)
        return principal

    def take(self, principal: str | None) -> None:
        """``try_take``, or the -32603 refusal naming the limit."""
        if not self.try_take(principal):
            raise MCPError(INTERNAL_ERROR, self.refusal.format(limit=self.limit))

    def give_back(self, principal: str | None) -> None:
        """One of ``principal``'s holdings ended."""
        if principal is None:
            return
        with self._lock:
            left = self._held.get(principal, 0) - 1
            if left > 0:
                self._held[principal] = left
            else:
                self._held.pop(principal, None)

    def held(self, principal: str | None) -> int:
        """How many ``principal`` holds now."""
        if principal is None:
            return 0
        with self._lock:
            return self._held.get(principal, 0)
