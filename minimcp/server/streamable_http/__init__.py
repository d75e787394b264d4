"""Streamable HTTP without I/O, and the resumable-stream store at the official import path.

Rule: this package turns HTTP requests into the core's calls and its answers back into HTTP, and
does no I/O: no socket, no WSGI environ, no framework request. Every HTTP status it and its
adapters answer is named in ``errors``.

- ``events``: ``EventStore`` and the log that keeps a stream's events in it (what this path
  exports, as the official SDK's does);
- ``exchange``: one HTTP request in (method, path, headers, body, who is calling), one answer out
  (status, headers, a body iterator): sessions, SSE, resumability, scopes and the ``Mcp-Param-*``
  check. It reads no socket and no WSGI environ; an adapter (``minimcp.server.edges.wsgi``, the hosts'
  views, ``testing``) turns its own request into an ``HTTPRequest`` and writes the ``HTTPResponse``;
- ``errors``: every status the exchange and its adapters answer, as named errors;
- ``sse``, ``param_headers``: the SSE frames, and the ``Mcp-Param-*`` check against a tool's schema;
- ``testing``: the exchange called in-process, the adapter a test needs.
"""

from minimcp.server.edges.http.events import EventCallback, EventId, EventMessage, EventStore, StreamId

__all__ = ["EventCallback", "EventId", "EventMessage", "EventStore", "StreamId"]
