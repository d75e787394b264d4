"""One HTTP request and its answer within a deadline and a size limit, for the code that fetches
from servers it does not control (an API an OpenAPI document describes, an authorization server's
keys or introspection endpoint) on a thread that someone waits on.

``requests`` bounds each socket operation, never the whole exchange: a server trickling a byte at a
time keeps every receive short and the exchange endless. And ``Session.send``, even told not to
follow redirects, reads a redirect's whole body (to offer ``Response.next``), with no bound on its
size or time. So here the request goes through the session's adapter (its headers, cookies,
adapters and environment still apply), connecting and the head wait for what is left of the
deadline, and the body is read a receive at a time, each bounded by what is left then, to at most
``limit`` bytes (after decompression). The session's adapters must answer with urllib3 responses,
as ``requests``' own ``HTTPAdapter`` does.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import requests
import urllib3
from requests.cookies import extract_cookies_to_jar
from requests.hooks import dispatch_hook

_CHUNK = 64 * 1024


class Late(Exception):
    """The deadline passed before the exchange was over."""


class TooLarge(Exception):
    """The body is longer than the limit."""


class ReadFailed(Exception):
    """The connection failed while the body was read; the message is urllib3's."""


def seconds_left(deadline: float) -> float:
    """What is left of ``deadline`` (a ``time.monotonic()`` time); ``Late`` once nothing is."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise Late
    return left


def open_response(session: requests.Session, prepared: requests.PreparedRequest, deadline: float) -> requests.Response:
    """Send ``prepared`` through ``session``'s adapter and return the response once its head is in,
    its body unread (close it, or read it with ``read_body``); never follows a redirect. Raises
    ``Late``, or a ``requests.RequestException`` for any other failure."""
    url = str(prepared.url)
    left = seconds_left(deadline)
    settings = session.merge_environment_settings(url, {}, True, None, None)
    try:
        # A urllib3 Timeout, which HTTPAdapter passes on as is: its head waits only for what
        # connecting left of the deadline (a (connect, read) pair would give each all of it).
        total: Any = urllib3.Timeout(total=left)
        answer = session.get_adapter(url).send(prepared, timeout=total, **settings)
    except requests.Timeout:
        raise Late from None
    extract_cookies_to_jar(session.cookies, prepared, answer.raw)
    return dispatch_hook("response", prepared.hooks, answer)


def read_body(answer: requests.Response, deadline: float, limit: int) -> bytes:
    """The body of ``answer`` (from ``open_response``), read by ``deadline`` and to at most
    ``limit`` bytes: else ``Late``, ``TooLarge`` or ``ReadFailed``."""
    raw: urllib3.BaseHTTPResponse = answer.raw
    parts: list[bytes] = []
    size = 0
    while True:
        left = seconds_left(deadline)
        sock: socket.socket | None = getattr(raw.connection, "sock", None)  # http.client's, under urllib3's
        if sock is not None:
            sock.settimeout(left)  # this receive ends by the deadline
        try:
            part = raw.read1(_CHUNK, decode_content=True)
        except (urllib3.exceptions.TimeoutError, socket.timeout):
            raise Late from None
        except (urllib3.exceptions.HTTPError, OSError) as failed:
            raise ReadFailed(str(failed)) from None
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > limit:
            raise TooLarge
        parts.append(part)
