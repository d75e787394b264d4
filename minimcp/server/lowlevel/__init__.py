"""The low-level tier: the sans-I/O protocol core every transport feeds.

Rule: nothing in this package opens a socket, reads a WSGI environ, touches a file descriptor or
knows a decorator, and nothing here imports a transport (``tests/test_layers.py``). A transport
hands it one parsed message and drains the outbox it gets back; ``mcpserver`` sits on top, registers
handlers and answers the core through one ``ServerHooks``. Threads, queues, blocking waits and
clocks live in ``workers`` alone: the bounded worker pool and the bounded waits.
"""

from minimcp.server.core.hooks import ServerHooks
from minimcp.server.core.initialization import InitializationOptions, NotificationOptions
from minimcp.server.core.server import Server

__all__ = ["InitializationOptions", "NotificationOptions", "Server", "ServerHooks"]
