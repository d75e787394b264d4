"""The access token of the request being served, for code that has no ``Context`` at hand.

The HTTP edge sets it around the dispatch of each authenticated request; a call's worker thread
runs in a copy of the dispatching thread's context, so a tool, a resolver, or anything they call
reads the caller's token with ``get_access_token()``. Threads a tool starts itself do not inherit
it (use ``ctx.access_token`` there).
"""

from __future__ import annotations

import contextvars

from minimcp.server.auth.provider import AccessToken

auth_context_var: contextvars.ContextVar[AccessToken | None] = contextvars.ContextVar("auth_context", default=None)


def get_access_token() -> AccessToken | None:
    """The verified access token of the current request, or ``None`` when it carried none."""
    return auth_context_var.get()
