"""Outboxes: the one channel a request's outgoing messages travel on, ending with its response.

The public path; the code lives in ``minimcp.server.core.outbox``."""

from minimcp.server.core.outbox import (
    EventLog,
    LogEntry,
    Outbox,
    QueueOutbox,
)

__all__ = ["EventLog", "LogEntry", "Outbox", "QueueOutbox"]
