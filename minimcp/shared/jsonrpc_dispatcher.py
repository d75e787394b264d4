"""``JSONRPCDispatcher`` at the official path: the stream a hand-built serving loop reads and writes.

In the official SDK it runs the message loop on anyio streams; here the loop is the stdio transport's
(``minimcp.server.edges.stdio``), and this object only names the two byte streams it serves, as
``stdio_server()`` yields them, for ``minimcp.server.edges.runner.serve_connection``.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import IO


@dataclass
class JSONRPCDispatcher:
    """Newline-delimited JSON-RPC on ``read_stream``/``write_stream``.

    ``raise_handler_exceptions`` shows the client the real text of internal failures (for
    debugging). ``inline_methods`` is accepted for the official signature: ``initialize`` is always
    answered before the next message is read.
    """

    read_stream: IO[bytes]
    write_stream: IO[bytes]
    _: KW_ONLY
    raise_handler_exceptions: bool = False
    inline_methods: frozenset[str] = frozenset()


__all__ = ["JSONRPCDispatcher"]
