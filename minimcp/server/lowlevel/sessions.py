"""What the server knows about one client: its era, its declarations, and (legacy) its session.

The public path; the code lives in ``minimcp.server.core.sessions``."""

from minimcp.server.core.sessions import (
    Connection,
    Elsewhere,
    LOG_LEVELS,
    MAX_STREAMS,
    QuestionProgress,
    ServerSession,
    SessionManager,
    STREAM_SWEEP,
    STREAM_TTL,
)

__all__ = ["Connection", "Elsewhere", "LOG_LEVELS", "MAX_STREAMS", "QuestionProgress", "ServerSession", "SessionManager", "STREAM_SWEEP", "STREAM_TTL"]
