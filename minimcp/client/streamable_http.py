"""Streamable HTTP for the client: the transport factory and the 2026-07-28 request-header rules.

``streamable_http_client(url)`` makes the transport ``Client("http://...")`` uses (which also takes
fixed ``headers=`` and a site's ``cookies=`` itself). Here headers, cookies, proxies,
TLS and authentication are configured on a ``requests.Session`` you pass as ``http_client``;
start from :func:`~minimcp.client.keepalive.http_session` to keep the one resend of a request whose
idle connection the server dropped (a plain ``requests.Session()`` reports that as an error)::

    http = http_session()
    http.headers["Authorization"] = "Bearer ..."
    with Client(streamable_http_client(url, http_client=http)) as client:
        ...

The header rules (``minimcp.shared.inbound``) are re-exported here, where the official SDK's
client keeps them: ``Mcp-Name`` and ``Mcp-Param-{Name}`` values are sent as plain text when they
are safe header text, else as ``=?base64?...?=``; a tool whose ``x-mcp-header`` annotations break
the rules is one a client must not call.
"""

from __future__ import annotations

import requests
import requests.auth

from minimcp.client.transports import DEFAULT_MAX_SSE_EVENT_SIZE, HttpTransport
from minimcp.shared.inbound import encoded_header as encode_header_value, header_parameters


def streamable_http_client(
    url: str,
    http_client: requests.Session | None = None,
    terminate_on_close: bool = True,
    auth: requests.auth.AuthBase | None = None,
    max_sse_event_size: int | None = DEFAULT_MAX_SSE_EVENT_SIZE,
) -> HttpTransport:
    """A Streamable HTTP transport to ``url``: ``Client(...)`` takes it, or ``with ... as (read, write)``.

    The session is DELETEd on close unless told otherwise. ``auth`` (an
    :class:`~minimcp.client.auth.OAuthClientProvider`, or any ``requests`` auth) signs every request
    this transport makes; one SSE event larger than ``max_sse_event_size`` bytes (``None``: no limit)
    fails the request it belongs to. A request with no ``timeout`` of its own waits at most
    ``transports.http.DEFAULT_TIMEOUT`` (connect, read) seconds, on your ``http_client`` too: ``requests`` has no
    session-wide timeout that could stand in for it.
    """
    return HttpTransport(
        url, http_client=http_client, terminate_on_close=terminate_on_close, auth=auth,
        max_sse_event_size=max_sse_event_size,
    )


__all__ = ["encode_header_value", "header_parameters", "streamable_http_client"]
