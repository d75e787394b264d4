"""``HTTPOptions``: the Streamable HTTP endpoint's options, declared once for the exchange and its
adapters (``MCPWSGIApp``, the Flask and Django hosts), which share one object."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

from minimcp.server.edges.http.security import TransportSecuritySettings

if TYPE_CHECKING:
    from minimcp.server.edges.http.events import EventStore


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HTTPOptions:
    """What one Streamable HTTP endpoint serves, and how much of the process it may hold.

    ``wsgi_app(http=HTTPOptions(...))``, or each field as a keyword of its own
    (``wsgi_app(json_response=True)``; the path there is ``streamable_http_path``, the official
    name). Each bound exists so that clients that open and leave, or never answer, cannot make
    the server keep their state without end.
    """

    #: Where the endpoint answers (default ``/mcp``); custom routes take any other path.
    path: str = "/mcp"
    #: Answer every request with one JSON body, never an SSE stream (default ``False``): for
    #: clients and proxies that cannot read streams; nothing reaches the client before the answer.
    json_response: bool = False
    #: Keep no legacy sessions (default ``False``): each request stands alone, so any process
    #: can serve any request without a shared backend, at the cost of server-to-client requests.
    stateless_http: bool = False
    #: Bytes a request body may hold (default 4 MiB): a larger one is refused (413) before it is
    #: read, so a client cannot make the server buffer what it likes.
    max_request_body_size: int = 4 * 1024 * 1024
    #: Which ``Host`` and ``Origin`` values are served (default ``None``: loopback names only),
    #: against DNS rebinding.
    transport_security: TransportSecuritySettings | None = None
    #: Seconds a legacy session may go unused before it ends (default 3600): a client that leaves
    #: without ``DELETE`` frees its session within the hour.
    session_idle_timeout: float = 3600.0
    #: Seconds between the comments an open SSE stream carries while it has nothing to say
    #: (default 15): the write that fails is how a vanished client is noticed.
    keepalive_interval: float = 15.0
    #: Milliseconds a client waits before it reconnects to a resumable stream (default 1000),
    #: announced on the stream.
    retry_interval: int = 1000
    #: Where the events of resumable streams are kept (``minimcp.server.streamable_http.EventStore``;
    #: default ``None``: in each request's log in this process).
    event_store: EventStore | None = None
    #: Legacy sessions alive at once (default 10 000): an ``initialize`` beyond it gets 503, as
    #: each session holds memory until it ends.
    max_sessions: int = 10_000
    #: Server-to-client requests one legacy session may leave unanswered at once (default 32):
    #: each holds a waiting worker.
    max_pending_per_session: int = 32


class HTTPKeywords(TypedDict, total=False):
    """``HTTPOptions``' fields as keywords, but for ``path``, which each constructor spells its way."""

    json_response: bool
    stateless_http: bool
    max_request_body_size: int
    transport_security: TransportSecuritySettings | None
    session_idle_timeout: float
    keepalive_interval: float
    retry_interval: int
    event_store: EventStore | None
    max_sessions: int
    max_pending_per_session: int


class ExchangeKeywords(HTTPKeywords, total=False):
    """The keywords ``Exchange`` takes: ``HTTPOptions``' fields by their own names."""

    path: str
