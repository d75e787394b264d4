"""What the stores behind the core's ports raise (``minimcp.server.core.ports``).

They live beside the ports, not with the stores, so that the core and the HTTP edge can tell an
unreachable store from a missing record without importing a backend: a client told "not found"
starts over, while an unreachable store is worth a retry (503 with ``Retry-After`` over HTTP for
the shared state, a -32603 for the tasks). A store that refuses the server's configuration
(credentials, TLS, permissions) is neither: no retry mends it, so it stops the server at start-up
and, found later, answers 500 naming the cause.
"""

from __future__ import annotations

from minimcp.jsonrpc import MCPError
from minimcp.types import INTERNAL_ERROR

__all__ = ["OWNER_FULL", "STORE_FULL", "BackendFault", "BackendMisconfigured", "BackendUnavailable", "TaskExpired",
           "TaskLimitReached", "TaskNotFound", "TaskStoreUnavailable"]

#: What ``TaskStore.create`` says when the store is full, and when the record's owner is (``{limit}``
#: filled in).
STORE_FULL = "The server holds its maximum of {limit} tasks; try again when some have expired"
OWNER_FULL = ("Too many tasks kept for this caller (limit {limit}; finished ones count until they expire); "
              "try again when some have expired")


class BackendFault(MCPError):
    """The shared state failed a command: ``BackendUnavailable`` (a retry may pass) or
    ``BackendMisconfigured`` (it will not)."""


class BackendUnavailable(BackendFault):
    """The shared state cannot be reached right now; ``retry_after`` seconds is a fair wait.

    The message a client sees does not say where the state lives; the server log does (``what``)."""

    #: What the client reads; a 2026-07-28 answer carrying it travels with 503 and ``Retry-After``.
    MESSAGE = "The server's shared state is unreachable; retry shortly"

    def __init__(self, what: str, retry_after: int = 1) -> None:
        super().__init__(INTERNAL_ERROR, self.MESSAGE)
        self.what = what
        self.retry_after = retry_after


class BackendMisconfigured(BackendFault, RuntimeError):
    """The shared state refuses this server's configuration: credentials, TLS, permissions, a
    cluster where one server was meant, a missing command. Waiting does not mend it; the operator does.

    ``cause`` is what a client reads (no host, no credentials); ``str()`` is ``detail``: where,
    what the store said, and what to change, the one line a server that stops at start-up prints.
    """

    #: What a client reads, ``{cause}`` filled in; an answer carrying it travels with 500.
    MESSAGE = "The server's shared state refuses the server's configuration ({cause}); this needs its operator"

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(INTERNAL_ERROR, self.MESSAGE.format(cause=cause))
        self.cause = cause
        self.detail = detail

    def __str__(self) -> str:
        return self.detail

    @classmethod
    def said_in(cls, message: object) -> bool:
        """Whether an error's message is one this fault gave a client."""
        head = cls.MESSAGE.partition("{")[0]
        return isinstance(message, str) and message.startswith(head)


class TaskNotFound(LookupError):
    """No task with this id is visible to the caller (unknown, purged, or someone else's)."""


class TaskExpired(TaskNotFound):
    """The task's TTL elapsed and the store discarded it; ``owner`` is whom it belonged to."""

    def __init__(self, task_id: str, owner: str | None) -> None:
        super().__init__(task_id)
        self.owner = owner


class TaskLimitReached(RuntimeError):
    """The store is full, or the owner already holds as many tasks as allowed (finished ones count
    until they expire)."""


class TaskStoreUnavailable(RuntimeError):
    """The shared state behind the tasks (a store or a channel over the network) did not answer.

    Distinct from ``TaskNotFound`` on purpose: a client told "not found" starts over, while this is
    a -32603 that a retry may get past."""
