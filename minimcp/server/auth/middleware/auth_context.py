"""The access token of the request being served, for code that has no ``Context`` at hand.

The HTTP edge sets it around the dispatch of each authenticated request; a call's worker thread
runs in a copy of the dispatching thread's context, so a tool, a resolver, or anything they call
reads the caller's token with ``get_access_token()``. Code that runs a body later, on a thread of
its own choosing, re-establishes its caller with ``acting_for(token)``, or runs the body in a copy
of the caller's context, as the tasks extension does. Threads a tool starts itself do not inherit
it (use ``ctx.access_token``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minimcp.server.auth.provider import AccessToken

auth_context_var: contextvars.ContextVar[AccessToken | None] = contextvars.ContextVar("auth_context", default=None)


def get_access_token() -> AccessToken | None:
    """The verified access token of the current request, or ``None`` when it carried none."""
    return auth_context_var.get()


@contextmanager
def acting_for(token: AccessToken | None) -> Iterator[None]:
    """Within the block, ``get_access_token()`` is ``token`` (the caller a deferred body runs for)."""
    current = auth_context_var.set(token)
    try:
        yield
    finally:
        auth_context_var.reset(current)
