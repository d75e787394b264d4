"""The drivers beneath ``Server.run()``, at the official path ``mcp.server.runner``.

A custom transport entry composes a ``Server`` (the handlers), a ``Connection`` (one client) and one
of two drivers: ``serve_one`` answers one request and returns its result dict; ``serve_connection``
serves a stream until it ends, as ``server.run()`` does for stdio. Both go through the server's one
dispatch path (middleware, era rules, worker pool); the entry enters the lifespan once and hands its
state to every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minimcp.jsonrpc import MCPError, Message
from minimcp.server.context import CallNext, ServerMiddleware
from minimcp.server.lowlevel.outbox import QueueOutbox
from minimcp.server.lowlevel.server import InitializationOptions, Server
from minimcp.server.lowlevel.sessions import Connection
from minimcp.server.stdio import serve_stdio
from minimcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher


def serve_one(server: Server[Any], dctx: Any, method: str, params: Mapping[str, Any] | None, *,
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
    return answer["result"]  # type: ignore[no-any-return]


def serve_connection(server: Server[Any], dispatcher: JSONRPCDispatcher, *, connection: Connection,
                     lifespan_state: Any, init_options: InitializationOptions | None = None) -> None:
    """Serve ``dispatcher``'s stream as the client ``connection`` (``Connection.for_loop``) until it
    ends; ``init_options`` replaces what ``initialize`` answers."""
    if init_options is not None:
        server._initialization_options = init_options
    connection.serving(server, lifespan_state)
    serve_stdio(server, dispatcher.read_stream, dispatcher.write_stream, dispatcher.raise_handler_exceptions,
                session=connection)


__all__ = ["CallNext", "ServerMiddleware", "serve_connection", "serve_one"]
