"""Reading a ``requests.Response`` (or the client's own ``DirectResponse``) as the HTTP transports
need: a body as it arrives, a reader woken from another thread, an unread answer closed without
losing its connection."""

from __future__ import annotations

import http.client
import logging
from collections.abc import Iterator

import requests
import urllib3.exceptions

logger = logging.getLogger("minimcp.client")


def chunks(response: requests.Response) -> Iterator[bytes]:
    """The body as it arrives; ``read1`` returns whatever one network read produced, never waiting
    to fill a buffer, so an event is seen the moment its bytes land."""
    read1 = getattr(response.raw, "read1", None)
    if read1 is None:  # urllib3 < 2 has no read1; chunked bodies still arrive chunk by chunk
        yield from response.iter_content(chunk_size=None)
        return
    while True:
        chunk = read1(65536)
        if not chunk:
            return
        yield chunk


def interrupt(response: requests.Response) -> None:
    """Wake the thread blocked reading ``response``; that thread closes it.

    Closing from here instead would wait for the reader to release the buffered stream's lock,
    i.e. for the server's next byte. urllib3 >= 2.3 can shut the socket down for reading;
    older versions leave the reader to its read timeout.
    """
    try:
        response.raw.shutdown()
    except (AttributeError, ValueError, RuntimeError, OSError):
        logger.debug("Cannot interrupt a streaming response", exc_info=True)


STREAM_ERRORS = (
    requests.exceptions.RequestException,
    http.client.HTTPException,
    urllib3.exceptions.HTTPError,
    OSError,
)


#: The largest unread body ``finish`` still reads to keep its connection (a 202's or 405's is tiny).
DRAIN_LIMIT = 64 * 1024


def finish(response: requests.Response) -> bytes | None:
    """Close a response we do not read, reading a short body to its end first: closing a response
    with unread bytes closes its connection, and the next request pays a new one. Only a body whose
    ``Content-Length`` says it is short is read (a stream or an open-ended body may never end); it
    is returned, for a caller that has a use for it after all (a refusal's message)."""
    try:
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) <= DRAIN_LIMIT:
            return response.content  # reading it is the point: it returns the connection to the pool
    except STREAM_ERRORS:
        logger.debug("Could not read the rest of a response", exc_info=True)
    finally:
        response.close()
    return None
