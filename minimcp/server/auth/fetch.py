"""One bounded HTTP exchange with an authorization server, for the verifiers.

A verifier runs on the thread serving a request, so a key server or an introspection endpoint that
is down, slow, or answers garbage must cost that request a bounded wait and a clear refusal, never
a hung worker: the whole exchange (connect, headers, body) has one deadline, the body one size
limit (``minimcp.shared.bounded_http``), and redirects are not followed, nor their bodies read (a
key set is fetched from exactly the URL configured).
"""

from __future__ import annotations

import json
import time
from typing import Any

import requests

from minimcp.shared.bounded_http import Late, ReadFailed, TooLarge, open_response, read_body

#: A key set or an introspection answer is a few kilobytes; anything past this is not one.
MAX_DOCUMENT_BYTES = 1024 * 1024


class FetchError(Exception):
    """The document could not be had; the message says why, for the server log."""


def fetch_json(session: requests.Session, method: str, url: str, *, timeout: float,
               max_bytes: int = MAX_DOCUMENT_BYTES, **kwargs: Any) -> Any:
    """The JSON document at ``url``, within ``timeout`` seconds overall, or a ``FetchError``;
    ``kwargs`` are ``requests.Request``'s (``data``, ``auth``, ``headers``)."""
    deadline = time.monotonic() + timeout
    try:
        prepared = session.prepare_request(requests.Request(method, url, **kwargs))
        with open_response(session, prepared, deadline) as response:
            if response.status_code != 200:
                raise FetchError(f"{url} answered HTTP {response.status_code}")
            body = read_body(response, deadline, max_bytes)
    except Late:
        raise FetchError(f"{url} took too long to answer") from None
    except TooLarge:
        raise FetchError(f"{url} answered more than {max_bytes} bytes") from None
    except ReadFailed as failed:
        raise FetchError(f"{url} failed while answering ({failed})") from None
    except requests.RequestException as exc:
        raise FetchError(f"{url} could not be reached ({type(exc).__name__})") from None
    try:
        return json.loads(body)
    except ValueError:
        raise FetchError(f"{url} did not answer JSON") from None
