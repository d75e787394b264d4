"""Reading what authorization servers answer: bounded bodies and OAuth error objects.

A misbehaving or hostile server may answer with gigabytes, or echo our secrets back in an error
page; so bodies are read up to a limit, and an error is described only by its RFC 6749 §5.2
``error`` and ``error_description`` members, cut short, never by the raw body.
"""

from __future__ import annotations

import json
from typing import Any

import requests
import requests.adapters
import urllib3.exceptions
from urllib3.util.retry import Retry

#: The largest body read from an authorization server (metadata, registration, token answers).
MAX_BODY_BYTES = 256 * 1024


def authorization_server_session() -> requests.Session:
    """A session for metadata, registration and token requests.

    A kept-alive connection may be closed by the server just as it is reused (Node closes idle
    ones after 5 s); a GET that meets one is sent again, twice at most, since reading metadata
    changes nothing. A POST is never repeated: a token request may spend a code.
    """
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(
        max_retries=Retry(total=2, allowed_methods=frozenset({"GET"}), status_forcelist=(), raise_on_status=False)
    )
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def read_limited(response: requests.Response, limit: int = MAX_BODY_BYTES) -> bytes:
    """Up to ``limit + 1`` bytes of a streamed body (one more than allowed tells the caller it was too big).

    Raises ``ConnectionError`` when the connection breaks mid-body.
    """
    with response:
        try:
            return response.raw.read(limit + 1, decode_content=True) or b""
        except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionError(f"the body could not be read ({exc.__class__.__name__})") from None


def json_object(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON object, or ``None`` when it is anything else."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def oauth_error_text(body: bytes) -> str:
    """``": invalid_grant (code expired)"`` from an OAuth error body, or ``""``."""
    document = json_object(body)
    if document is None or not isinstance(document.get("error"), str):
        return ""
    text = document["error"][:100]
    description = document.get("error_description")
    if isinstance(description, str):
        text += f" ({description[:300]})"
    return ": " + text


__all__ = ["MAX_BODY_BYTES", "authorization_server_session", "json_object", "oauth_error_text", "read_limited"]
