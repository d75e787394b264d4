"""How the processes serving one set of tasks reach each other: the ``TaskChannel`` interface and
the one-process default.

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

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from typing import Any, Callable

#: ``deliver(kind, task_id, params)``: ``kind`` is ``"status"`` (``params``: the notification's),
#: ``"cancel"`` or ``"resume"`` (``params`` ``None``).
Deliver = Callable[[str, str, "dict[str, Any] | None"], None]

#: The message kinds a channel carries.
KINDS = frozenset({"status", "cancel", "resume"})


class TaskChannel(ABC):
    """The interface a task channel implements; see the module docstring."""

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


class LocalTaskChannel(TaskChannel):
    """One process: every message is a direct call, and the only process is this one (always alive)."""

    def __init__(self) -> None:
        self._id = secrets.token_hex(8)
        self._deliver: Deliver | None = None

    def attach(self, deliver: Deliver, tick: Callable[[], None]) -> None:
        self._deliver = deliver

    @property
    def process_id(self) -> str:
        return self._id

    def announce(self, task_id: str, params: dict[str, Any]) -> None:
        if self._deliver is not None:
            self._deliver("status", task_id, params)

    def tell(self, process_id: str, kind: str, task_id: str) -> None:
        if self._deliver is not None:
            self._deliver(kind, task_id, None)

    def alive(self, process_id: str) -> bool:
        return True
