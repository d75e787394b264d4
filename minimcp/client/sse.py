"""The client for servers that still speak the deprecated HTTP+SSE transport (spec 2024-11-05).

``with Client(sse_client("https://example.com/sse"), mode="legacy") as client:`` talks to such a
server as to any other legacy one; the official SDK's ``mcp.client.sse`` has the same signature
(less its httpx factory: headers and ``auth`` are the knobs here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import requests.auth

from minimcp.client.transports.http_sse import SseTransport


def sse_client(
    url: str,
    headers: Mapping[str, Any] | None = None,
    timeout: float = 5.0,
    sse_read_timeout: float = 300.0,
    auth: requests.auth.AuthBase | None = None,
    on_session_created: Callable[[str], None] | None = None,
) -> SseTransport:
    """A transport to the SSE endpoint ``url``: ``Client(...)`` takes it, or ``with ... as (read, write)``.

    ``timeout`` bounds each POST and the wait for the stream's ``endpoint`` event; the stream may
    stay silent for ``sse_read_timeout`` seconds before it counts as lost. ``on_session_created``
    receives the session id the endpoint URL carries.
    """
    return SseTransport(url, headers=headers, timeout=timeout, sse_read_timeout=sse_read_timeout, auth=auth,
                        on_session_created=on_session_created)


__all__ = ["sse_client"]
