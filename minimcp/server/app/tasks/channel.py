"""``LocalTaskChannel``: the ``TaskChannel`` of one process, where every message is a direct call.

Several processes sharing a task store reach each other over a shared channel (``RedisTaskChannel``,
or your own) that follows the ``TaskChannel`` port (``minimcp.server.core.ports``).
"""

from __future__ import annotations

import secrets
from typing import Any, Callable

from minimcp.server.core.ports import Deliver, TaskChannel



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
