"""What the server knows about one client: its era, its declarations, and (legacy) its session.

The public path; the code lives in ``minimcp.server.core.sessions`` (``Connection``) and the modules
of its parts: ``session_manager``, ``asking``, ``retention``; ``ServerSession`` lives in
``minimcp.server.core.context``."""

from minimcp.server.core.asking import QuestionProgress
from minimcp.server.core.retention import MAX_STREAMS, STREAM_SWEEP, STREAM_TTL
from minimcp.server.core.context import ServerSession
from minimcp.server.core.session_manager import SessionManager
from minimcp.server.core.sessions import LOG_LEVELS, Connection, Elsewhere

__all__ = ["Connection", "Elsewhere", "LOG_LEVELS", "MAX_STREAMS", "QuestionProgress", "ServerSession", "SessionManager", "STREAM_SWEEP", "STREAM_TTL"]
