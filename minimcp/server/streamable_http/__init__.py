"""The resumable-stream store at the official import path ``mcp.server.streamable_http``.

The code lives in ``minimcp.server.edges.http``; this package only re-exports.
"""

from minimcp.server.edges.http.events import EventCallback, EventId, EventMessage, EventStore, StreamId

__all__ = ["EventCallback", "EventId", "EventMessage", "EventStore", "StreamId"]
