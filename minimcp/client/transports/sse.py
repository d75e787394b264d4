"""``text/event-stream`` framing: the incremental parser the HTTP transport reads streams with."""

from __future__ import annotations

import re
from dataclasses import dataclass

from minimcp.jsonrpc import MCPError
from minimcp.types import CONNECTION_CLOSED


@dataclass
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


_LINE_END = re.compile(rb"\r\n|\n|\r")


class SSEParser:
    """Incremental ``text/event-stream`` decoder: feed it bytes as they arrive, get whole events.

    Follows the WHATWG rules the harness relies on: comment lines (``:``) and events whose data is
    empty (the priming event) are not dispatched, but their ``id:`` and ``retry:`` still count, so
    :attr:`last_event_id` and :attr:`retry_ms` are what a resumption needs.
    """

    def __init__(self, max_event_size: int | None = None) -> None:
        self.max_event_size = max_event_size
        self._buffer = b""
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Raises ``MCPError`` when one event grows past ``max_event_size`` bytes; the partial
        event is dropped so that a resumed stream starts clean."""
        self._buffer += chunk
        self._check_size(len(self._buffer))
        events: list[SSEEvent] = []
        start = 0
        while True:
            match = _LINE_END.search(self._buffer, start)
            if match is None:
                break
            if match.group() == b"\r" and match.end() == len(self._buffer):
                break  # a CR at the end of what we have may be the first half of a CRLF
            event = self._line(self._buffer[start:match.start()].decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
            start = match.end()
        self._buffer = self._buffer[start:]
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            data, event = "\n".join(self._data), self._event
            self._data, self._event, self._data_size = [], "", 0
            if not data:
                return None
            return SSEEvent(data=data, event=event or "message", id=self.last_event_id)
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_size += len(value.encode("utf-8")) + 1
            self._check_size(0)
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _check_size(self, pending: int) -> None:
        limit = self.max_event_size
        if limit is not None and self._data_size + pending > limit:
            self._buffer, self._data, self._event, self._data_size = b"", [], "", 0
            raise MCPError(CONNECTION_CLOSED, f"SSE stream failed: Server-sent event exceeded the {limit} byte limit.")
