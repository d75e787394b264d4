"""Streamable HTTP without I/O: one ``HTTPRequest`` in, one ``HTTPResponse`` out.

Rule: no socket, no WSGI environ, no framework request. An adapter (``edges.wsgi``, the hosts'
views, ``testing``) builds the request and writes the response.

- ``exchange``: sessions, SSE, resumability, the plan's scope and ``Mcp-Param-*`` checks;
- ``errors``: every status the exchange and its adapters answer, as named errors;
- ``events``: ``EventStore`` and the log that keeps a stream's events in it;
- ``security``: the Host/Origin rules; ``sse``: the frames; ``param_headers``: the header check;
- ``testing``: the exchange called in-process, the adapter a test needs.
"""
