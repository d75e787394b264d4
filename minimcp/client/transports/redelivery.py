"""When a POST the server refused is worth sending again, and after how long.

A server (or a proxy before it) that cannot take a message now says so with 503 or 429, often
with ``Retry-After`` (seconds, or an HTTP date). What the client POSTs with no answer of its own to
wait for (its answers to a server's questions, its notifications) is sent again after that wait
(``FIRST_WAIT`` doubling when the server names none), each wait within ``MIN_WAIT`` and
``MAX_WAIT``, and never past the bound of what waits on it: the call a question belongs to fails
as soon as the next wait would pass its deadline, rather than wait for an answer that was never
delivered. Any other refusal is final at once.
"""

from __future__ import annotations

import email.utils
import time
from typing import NamedTuple

#: The refusals that mean "not now": 503 Service Unavailable and 429 Too Many Requests.
RETRYABLE = frozenset({429, 503})
#: The first wait when the server names none; each later one doubles.
FIRST_WAIT = 0.5
#: The shortest and the longest wait between two sends, whatever ``Retry-After`` says.
MIN_WAIT, MAX_WAIT = 0.1, 10.0
#: How long a message is sent again when nothing bounds it (a call without a timeout).
BUDGET = 60.0


def retry_after(value: str | None) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number, or an HTTP date); ``None`` when
    it is absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Refusal(NamedTuple):
    """Why a message was not delivered: the last HTTP status (``None``: the POST itself failed),
    the server's reason, and why it was not sent again (``""``: the refusal was final)."""

    status: int | None
    reason: str | None
    why: str = ""


class Redelivery:
    """The sends of one message: ``wait`` is how long to wait before the next after a refusal,
    or ``None`` to stop (``why`` then says why, when the refusal itself was not final).

    ``deadline`` (``time.monotonic()``) bounds every wait and send; without one the bound is
    ``BUDGET`` seconds from now. ``attempts`` caps the sends.
    """

    def __init__(self, deadline: float | None, attempts: int | None = None) -> None:
        self.deadline = deadline if deadline is not None else time.monotonic() + BUDGET
        self.attempts = attempts
        self.sent = 0
        self.why = ""

    def remaining(self) -> float:
        """Seconds left for the next send (a little at least, so that it can still be refused)."""
        return max(self.deadline - time.monotonic(), 0.001)

    def wait(self, status: int, asked: str | None) -> float | None:
        """After a refusal with ``status`` and ``Retry-After: asked``: the seconds to wait before
        sending again, or ``None`` when the message is not sent again."""
        self.sent += 1
        if status not in RETRYABLE:
            return None
        if self.attempts is not None and self.sent >= self.attempts:
            self.why = f"still refused after {self.sent} attempts"
            return None
        named = retry_after(asked)
        delay = min(max(named, MIN_WAIT) if named is not None else FIRST_WAIT * 2 ** (self.sent - 1), MAX_WAIT)
        if time.monotonic() + delay >= self.deadline:
            self.why = (f"it asked to wait {named:g} s, past the call's deadline" if named is not None
                        else f"still refused at the call's deadline, after {self.sent} attempts")
            return None
        return delay
