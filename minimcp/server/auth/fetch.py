"""One bounded HTTP exchange with an authorization server, for the verifiers.

A verifier runs on the thread serving a request, so a key server or an introspection endpoint that
is down, slow, or answers garbage must cost that request a bounded wait and a clear refusal, never
a hung worker: the whole exchange (connect, headers, body) has one deadline, the body one size
limit, and redirects are not followed (a key set is fetched from exactly the URL configured).
"""

from __future__ import annotations

import json
import time
from typing import Any

import requests

#: A key set or an introspection answer is a few kilobytes; anything past this is not one.
MAX_DOCUMENT_BYTES = 1024 * 1024


class FetchError(Exception):
    """The document could not be had; the message says why, for the server log."""


def fetch_json(session: requests.Session, method: str, url: str, *, timeout: float,
               max_bytes: int = MAX_DOCUMENT_BYTES, **kwargs: Any) -> Any:
    """The JSON document at ``url``, within ``timeout`` seconds overall, or a ``FetchError``."""
    deadline = time.monotonic() + timeout
    try:
        with session.request(method, url, timeout=(timeout, timeout), stream=True, allow_redirects=False,
                             **kwargs) as response:
            if response.status_code != 200:
                raise FetchError(f"{url} answered HTTP {response.status_code}")
            body = _read_until(response, deadline, max_bytes, url)
    except requests.RequestException as exc:
        raise FetchError(f"{url} could not be reached ({type(exc).__name__})") from None
    try:
        return json.loads(body)
    except ValueError:
        raise FetchError(f"{url} did not answer JSON") from None


def _read_until(response: requests.Response, deadline: float, max_bytes: int, url: str) -> bytes:
    # read1 returns what one receive brings, so a server that trickles bytes meets the deadline
    # between receives instead of holding a read that asked for more.
    raw = response.raw
    read = getattr(raw, "read1", None) or raw.read
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise FetchError(f"{url} took too long to answer")
        part = read(65536, decode_content=True)
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > max_bytes:
            raise FetchError(f"{url} answered more than {max_bytes} bytes")
        parts.append(part)
