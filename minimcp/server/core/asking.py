"""The questions a server asked one legacy client that await its answers.

A question is a server-to-client request (an elicitation, a sampling request, a roots listing, a
ping) that a worker waits on; its answer is taken from the table of pending requests
(``minimcp.server.core.pending``). A question asked with an ``on_progress`` callback carries a
``progressToken`` of this server's, and the client's progress on it reaches that callback until
the question is answered.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any, Callable

from minimcp.server.core.outbox import Outbox
from minimcp.server.core.pending import PendingRequests, send_request
from minimcp.server.core.workers import Lock

__all__ = ["OpenQuestions", "QuestionProgress", "checked_timeout"]

logger = logging.getLogger("minimcp.server.session")

#: What hears a client's progress on a question the server asked: (progress, total, message).
QuestionProgress = Callable[[float, "float | None", "str | None"], None]
#: How the ``progressToken`` of a question of this server's begins: other tokens are not looked up,
#: nor relayed to the other processes of a shared session.
_QUESTION_TOKEN = "question-"


def checked_timeout(timeout: Any, name: str) -> float | None:
    """One request's wait in place of the server's ``back_channel_timeout`` (``None``: that one)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


class OpenQuestions:
    """One client's questions in flight: the pending requests their answers are taken from, and the
    progress callbacks of those asked with one."""

    def __init__(self) -> None:
        self.pending = PendingRequests()
        # _lock guards _progress (progressToken -> the callback of a question asked with one).
        self._lock = Lock()
        self._progress: dict[str, QuestionProgress] = {}

    def ask(self, channel: Outbox, method: str, params: dict[str, Any], timeout: float,
            on_progress: QuestionProgress | None = None) -> dict[str, Any]:
        """Ask on ``channel`` and wait ``timeout`` seconds at most for the raw result; with
        ``on_progress``, the question carries a ``progressToken`` whose notifications it hears until
        the question is answered."""
        if on_progress is not None:
            token = f"{_QUESTION_TOKEN}{secrets.token_hex(8)}"
            params = {**params, "_meta": {**(params.get("_meta") or {}), "progressToken": token}}
            with self._lock:
                self._progress[token] = on_progress
        try:
            return send_request(self.pending, channel, method, params, timeout)
        finally:
            if on_progress is not None:
                with self._lock:
                    self._progress.pop(token, None)

    def progress(self, params: Any) -> bool | None:
        """A client's ``notifications/progress``, to the callback of the question it is about: ``True``
        when one here heard it, ``False`` when it is about a question of this server's that none here
        asked (another process's, perhaps), ``None`` when it is about no question of this server's.
        A failing callback is logged; the notification has no one to answer."""
        if not isinstance(params, dict):
            return None
        token, progress = params.get("progressToken"), params.get("progress")
        if not (isinstance(token, str) and token.startswith(_QUESTION_TOKEN)) \
                or isinstance(progress, bool) or not isinstance(progress, (int, float)):
            return None
        with self._lock:
            callback = self._progress.get(token)
        if callback is None:
            return False
        total, message = params.get("total"), params.get("message")
        try:
            callback(progress, total if isinstance(total, (int, float)) else None,
                     message if isinstance(message, str) else None)
        except Exception:
            logger.exception("the progress callback of a question failed")
        return True
