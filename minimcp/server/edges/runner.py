"""Where a server meets its transports, at the official path ``mcp.server.runner``.

``Server.run()``, ``Server.wsgi_app()`` and ``Server.in_memory_endpoint()`` are answered here: this
module chooses the transport and imports it, so the core (``minimcp.server.core``) imports none.
``serve_http`` serves the WSGI app on minimcp's own HTTP server.

A custom transport entry composes a ``Server`` (the handlers), a ``Connection`` (one client) and one
of two drivers: ``serve_one`` answers one request and returns its result dict; ``serve_connection``
serves a stream until it ends, as ``server.run()`` does for stdio. Both go through the server's one
dispatch path (middleware, era rules, worker pool); the entry enters the lifespan once and hands its
state to every call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import Unpack

from minimcp.jsonrpc import MCPError, Message
from minimcp.server.core.context import CallNext, ServerMiddleware
from minimcp.server.core.outbox import QueueOutbox
from minimcp.server.core.initialization import InitializationOptions
from minimcp.server.core.sessions import Connection
from minimcp.server.edges.memory import InMemoryEndpoint
from minimcp.server.edges.stdio import serve_stdio
from minimcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

if TYPE_CHECKING:
    from minimcp.server.core.dispatch import ServedServer
    from minimcp.server.edges.wsgi import MCPWSGIApp, WSGIAppKeywords

__all__ = ["CallNext", "ServerMiddleware", "in_memory_endpoint", "run", "serve_connection", "serve_http",
           "serve_one", "wsgi_app"]

logger = logging.getLogger("minimcp.server.runner")


def run(server: ServedServer, read_stream: Any = None, write_stream: Any = None,
        initialization_options: InitializationOptions | None = None, raise_exceptions: bool = False, *,
        transport: Literal["stdio", "streamable-http"] | None = None, **options: Any) -> None:
    """``server.run(...)``: serve the given streams, else the transport named, inside the lifespan."""
    if initialization_options is not None:
        server.initialization_options = initialization_options
    if transport not in (None, "stdio", "streamable-http"):
        raise ValueError(f"Unknown transport: {transport}")
    with server.running():
        if transport == "streamable-http" and read_stream is None and write_stream is None:
            serve_http(server, **options)
        else:
            serve_stdio(server, read_stream, write_stream, raise_exceptions)


def wsgi_app(server: ServedServer, **options: Unpack[WSGIAppKeywords]) -> MCPWSGIApp:
    """``server.wsgi_app(...)``: the Streamable HTTP endpoint as a WSGI application. Werkzeug is
    imported here, when one is first built, not by a server that never serves HTTP."""
    from minimcp.server.edges.wsgi import MCPWSGIApp

    return MCPWSGIApp(server, **options)


def in_memory_endpoint(server: ServedServer, raise_exceptions: bool = False) -> InMemoryEndpoint:
    """``server.in_memory_endpoint(...)``: one connection without sockets."""
    return InMemoryEndpoint(server, raise_exceptions)


def serve_http(server: ServedServer, host: str = "127.0.0.1", port: int = 8000, *, max_connections: int = 4096,
               max_connections_per_peer: int | None = 256, idle_timeout: float = 75.0, header_timeout: float = 10.0,
               body_timeout: float = 30.0, pin_cpu: bool = True, **options: Any) -> None:
    """Serve ``server`` on minimcp's keep-alive HTTP/1.1 server until interrupted.

    ``max_connections``, ``max_connections_per_peer``, the timeouts and ``pin_cpu`` configure the
    HTTP server (see ``minimcp.httpd.WSGIServer``); every other option goes to :class:`MCPWSGIApp`.
    """
    from minimcp.httpd import WSGIServer

    app = wsgi_app(server, **options)
    httpd = WSGIServer(app, host, port, max_connections=max_connections,
                       max_connections_per_peer=max_connections_per_peer, idle_timeout=idle_timeout,
                       header_timeout=header_timeout, body_timeout=body_timeout, pin_cpu=pin_cpu)
    logger.info("serving MCP on http://%s:%s%s", host, httpd.port, app.path)
    try:
        httpd.run()
    finally:
        app.exchange.close()


def serve_one(server: ServedServer, dctx: Any, method: str, params: Mapping[str, Any] | None, *,
              connection: Connection, lifespan_state: Any, timeout: float = 600.0) -> dict[str, Any]:
    """Answer one request ``(method, params)`` on ``connection`` and return its result in wire form.

    ``dctx`` is the request's dispatch context (``request_id``, ``transport``, and ``notify`` for the
    messages the handler sends while it runs). An error answer raises its ``MCPError``, which the
    entry puts on its wire; ``timeout`` bounds the wait for the handler (``REQUEST_TIMEOUT``). The
    connection's cleanups (``connection.exit_stack``) run on the way out.
    """
    connection.serving(server, lifespan_state)
    message: Message = {"jsonrpc": "2.0", "id": dctx.request_id, "method": method,
                        "params": dict(params) if params is not None else None}
    outbox = QueueOutbox(can_request=False)
    try:
        answer = server.dispatcher.handle_request(message, connection, outbox, dctx.transport)
        if answer is None:
            answer = outbox.drain(lambda sent: dctx.notify(sent["method"], sent.get("params")), method, timeout)
    finally:
        connection.close()
    error = answer.get("error")
    if error is not None:
        raise MCPError(error["code"], error["message"], error.get("data"))
    return answer["result"]


def serve_connection(server: ServedServer, dispatcher: JSONRPCDispatcher, *, connection: Connection,
                     lifespan_state: Any, init_options: InitializationOptions | None = None) -> None:
    """Serve ``dispatcher``'s stream as the client ``connection`` (``Connection.for_loop``) until it
    ends; ``init_options`` replaces what ``initialize`` answers."""
    if init_options is not None:
        server.initialization_options = init_options
    connection.serving(server, lifespan_state)
    serve_stdio(server, dispatcher.read_stream, dispatcher.write_stream, dispatcher.raise_handler_exceptions,
                connection=connection)

