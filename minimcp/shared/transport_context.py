"""``TransportContext``: what the protocol core may know about the transport a message came by.

The core never sees a socket, a WSGI environ or a werkzeug ``Request``; each transport describes
the message in this frozen record instead. ``request`` is carried through untouched for user
code on WSGI (``ctx.request``), and nothing in the core reads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True, frozen=True, init=False)
class TransportContext:
    """One inbound message's transport, as the core and the handlers see it.

    Frozen, and built per HTTP request: its ``__init__`` writes every field at once rather than
    through ``object.__setattr__`` one by one (what a frozen dataclass's own does, at a third of
    the cost of describing the request). Its parameters are the fields, in order, with their
    defaults.
    """

    kind: str
    """``"streamable-http"``, ``"stdio"`` or ``"memory"``."""
    can_send_request: bool
    """Whether a server-to-client request can travel back on this message's channel."""
    headers: Mapping[str, str] | None = None
    """The HTTP request headers (case-insensitive lookup); ``None`` off HTTP."""
    principal: str | None = None
    """The authenticated caller, as the transport's principal hook found it; ``None`` when anonymous."""
    client_address: str | None = None
    """The client's network address (HTTP's ``REMOTE_ADDR``): who an anonymous caller is, for the
    per-principal shares (``minimcp.server.core.shares``); ``None`` off HTTP."""
    access_token: Any = None
    """The verified bearer token (an ``AccessToken``) on a protected HTTP endpoint; ``None`` elsewhere."""
    make_request: Callable[[], Any] | None = None
    """Builds ``request`` on first use: most calls never read it, and building one costs more
    than the rest of the transport's description."""

    def __init__(self, *, kind: str, can_send_request: bool, headers: Mapping[str, str] | None = None,
                 principal: str | None = None, client_address: str | None = None, access_token: Any = None,
                 make_request: Callable[[], Any] | None = None) -> None:
        self.__dict__.update(kind=kind, can_send_request=can_send_request, headers=headers, principal=principal,
                             client_address=client_address, access_token=access_token, make_request=make_request)

    @functools.cached_property
    def request(self) -> Any:
        """The werkzeug ``Request`` on WSGI, for user code only; ``None`` elsewhere."""
        return self.make_request() if self.make_request is not None else None


__all__ = ["TransportContext"]
