"""The low-level tier: the sans-I/O protocol core every transport feeds.

Rule: nothing in this package opens a socket, reads a WSGI environ, touches a file descriptor or
knows a decorator. A transport hands it one parsed message and drains the outbox it gets back;
``mcpserver`` sits on top and only registers handlers. Threads appear only as the bounded worker
pool and the bounded waits in ``calls``.
"""

from minimcp.server.lowlevel.server import InitializationOptions, NotificationOptions, Server

__all__ = ["InitializationOptions", "NotificationOptions", "Server"]
