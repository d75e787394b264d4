"""Server-to-client requests of one connection that await the client's answers.

The public path; the code lives in ``minimcp.server.core.pending``."""

from minimcp.server.core.pending import (
    MAX_ANSWER_BYTES,
    PendingRequests,
    send_request,
    take_answer,
    UnexpectedAnswer,
)

__all__ = ["MAX_ANSWER_BYTES", "PendingRequests", "send_request", "take_answer", "UnexpectedAnswer"]
