"""The server a connection and a request are served by, as the core beneath ``Server`` sees it.

A ``Connection`` asks its server for the lifespan's value, the broadcast its standalone channel
joins, the share of questions each caller may leave unanswered and how long a question may wait;
a handler's context names the server (``ctx.server``). ``ServingServer`` says exactly that much, so
that the modules beneath the low-level ``Server`` never import it (the server imports them); the
dispatcher and the transports see more of it (``minimcp.server.core.dispatch.ServedServer``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from minimcp.server.core.listens import Listens
    from minimcp.server.core.shares import Shares

__all__ = ["Broadcasting", "ServingServer"]


class Broadcasting(Protocol):
    """Where a server's open listens and legacy standalone channels are kept (its dispatcher)."""

    @property
    def listens(self) -> Listens: ...


class ServingServer(Protocol):
    """What a connection, and a handler through ``ctx.server``, may use of the server serving it."""

    @property
    def name(self) -> str: ...

    @property
    def dispatcher(self) -> Broadcasting: ...

    @property
    def question_shares(self) -> Shares:
        """How many questions each caller may leave unanswered at once."""

    @property
    def back_channel_timeout(self) -> float:
        """Seconds a question waits for the client's answer, unless it says otherwise."""

    def lifespan_context(self) -> Any:
        """What the server's lifespan yielded, entering it on first use in this process."""
