"""Server-sent events as Streamable HTTP writes them: the frames, and the headers of a stream."""

from __future__ import annotations

from minimcp import jsonrpc
from minimcp.jsonrpc import Message

#: The headers every SSE answer opens with (``X-Accel-Buffering``: nginx must not hold events back).
SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
#: What a stream writes while nothing else is said: a failed write is how a vanished client is noticed.
KEEPALIVE = b": keepalive\n\n"
#: The first thing a standalone (GET) stream writes, so the client sees it open at once.
STREAM_OPEN = b": stream open\n\n"


def event(message: Message, event_id: str | None = None) -> bytes:
    """One message as an SSE ``message`` event, with its id when the stream is resumable."""
    prefix = b"" if event_id is None else f"id: {event_id}\n".encode()
    return prefix + b"event: message\ndata: " + jsonrpc.encode(message) + b"\n\n"


def resume_point(event_id: str, retry_interval: int) -> bytes:
    """An event with an id and no data: where a reconnecting client resumes, and after how long."""
    return f"id: {event_id}\nretry: {retry_interval}\ndata: \n\n".encode()
