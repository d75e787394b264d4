"""A threaded HTTP/1.1 server for WSGI apps that keeps connections alive and can face the internet.

Rule: this package knows HTTP/1.1 and WSGI, and nothing of MCP: it imports no other minimcp
module (``tests/test_httpd_layering.py``).

Why minimcp has its own: werkzeug's development server answers every request with
``Connection: close`` (``http.server`` cannot drain an unread body before the next request line),
so each MCP request paid a TCP handshake and a fresh thread. MCP clients hold one connection and
send request after request on it; this server keeps the connection for the next one. It is what
``mcp.run(transport="streamable-http")`` uses; any WSGI app can run on it.

How it is built:

- ``parsing``: requests are parsed by llhttp (through httptools, when installed) or by h11, and
  refused with ``400`` where either is lenient and gunicorn is not (the rules are listed there);
  both parsers give the same verdicts.
- ``limits``: every bound (bytes, fields, connections, seconds) in one place.
- ``bridge``: one parsed request through the WSGI app, its body read as the app asks, its answer
  framed and sent.
- ``minimcp.thread_pool``: the threads requests run on (a pool of the server's own, of the class
  the MCP core uses, which imports nothing of MCP); ``sockets``: how a worker reads
  and sends, each wait bounded by the kernel; ``affinity``: every thread of a server on one CPU,
  since they take turns at the GIL and a turn between cores costs more than a request.
- ``connections``: one thread, the loop (``serve_forever``), owns the listening socket and every connection that is
  not running a request. Idle keep-alive connections, and requests whose head is still arriving,
  wait in a ``selectors`` selector: they cost a descriptor and no thread, and the loop reads their
  bytes without blocking. A complete head goes to a worker thread, which runs the app, reads the
  body as the app asks for it, sends the answer, and hands the connection back to the loop.
- The loop never waits for a client. At ``max_connections`` a new connection closes the
  longest-idle keep-alive one to take its place; it is answered ``503`` with ``Retry-After``, by a
  non-blocking send, when every connection holds a request, when its address is at
  ``max_connections_per_peer``, or when no descriptor is left; a closing connection's lingering
  read (so the kernel does not reset away the last response) is done by the selector, bounded in
  time and bytes. Such events are logged at most once per interval, with a count.
- ``max_workers`` (by default ``max_connections``) bounds the requests running at once; one past
  it waits in the loop, holding no thread, for the first worker that comes free, and is answered
  ``503`` after ``wait_timeout`` seconds. An event stream (a GET accepting ``text/event-stream``)
  holds its thread while open, so streams may take all but ``stream_reserve`` of them (by default
  an eighth), kept for requests that end; a stream past that is answered ``503`` with
  ``Retry-After`` at once.
- Time limits: a request head must be complete ``header_timeout`` seconds after its first byte (or
  after the connection opened), else ``408`` and close; a body must be in ``body_timeout`` seconds
  after its head; a connection idle between requests closes after ``idle_timeout``, and so does
  one whose client stops reading a response for that long.

What it speaks: HTTP/1.0 and 1.1; request bodies framed by Content-Length or chunked;
``Expect: 100-continue``; responses framed by the app's Content-Length, else chunked (HTTP/1.1)
or closed (HTTP/1.0), each chunk sent as soon as the app yields it, which is what SSE needs.
Limits: request target and each header line 8 KiB, a head 64 KiB, 100 header fields. Not TLS, not
HTTP/2: behind a proxy, or for several processes, use gunicorn (``gthread`` workers) with
``mcp.wsgi_app()``.

This package knows nothing of MCP: it imports nothing from the rest of minimcp.
"""

from __future__ import annotations

from minimcp.httpd.connections import WSGIServer
from minimcp.httpd.parsing import BadRequest

__all__ = ["BadRequest", "WSGIServer"]
