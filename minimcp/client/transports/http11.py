"""An HTTP/1.1 answer read off a kept-alive socket, for the client's direct path (``direct``).

Why not ``http.client.HTTPResponse``: it parses the head with the ``email`` package, which costs
a JSON-RPC call on loopback more CPU than the rest of reading its answer. This reads the status
line and the header lines itself (names lower-cased, looked up in any case), then the body framed
as RFC 9112 section 6.3 says: chunked, ``Content-Length``, or up to the connection's end. It
raises ``http.client``'s exceptions (``RemoteDisconnected`` for a connection closed before any
answer byte, ``IncompleteRead`` for a body cut short), so callers treat both readers alike.
"""

from __future__ import annotations

import http.client
import socket
from typing import Any

#: The longest status, header or chunk-size line read (as ``http.client``'s limit).
MAX_LINE = 65536
#: The most header lines one answer may have (as ``http.client``'s limit).
MAX_HEADERS = 100


class Headers(dict[str, str]):
    """Header names lower-cased, looked up in any case, as ``requests``' and ``http.client``'s are."""

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


class Answer:
    """One answer: ``status`` and ``headers`` once constructed, the body through ``read`` or ``read1``.

    ``isclosed()`` says the body was read to its end, and ``will_close`` whether the connection
    ends with it; only an answer that is both read and not closing leaves its connection reusable.
    """

    def __init__(self, sock: socket.socket, method: str) -> None:
        self._fp = sock.makefile("rb")
        while True:
            line = self._line()
            if not line:
                raise http.client.RemoteDisconnected("Remote end closed connection without response")
            version, _, rest = line.decode("latin-1").partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise http.client.BadStatusLine(repr(line))
            self.status = int(code)
            self.headers = self._headers()
            if not 100 <= self.status < 200:  # an interim answer (100 Continue) precedes the real one
                break
        connection = self.headers.get("connection", "").lower()
        self._chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self._left: int | None = None  # body bytes left to read; in chunked coding, of this chunk
        self._crlf_due = False  # the CRLF after a chunk's data is still to be read
        if self._chunked:
            self._left = 0
        elif self.status in (204, 304) or method == "HEAD":
            self._left = 0
        else:
            length = self.headers.get("content-length", "").strip()
            self._left = int(length) if length.isdigit() else None
        self.will_close = ("close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
                           or self._left is None)
        self._done = False
        if self._left == 0 and not self._chunked:
            self._finish()

    def _line(self) -> bytes:
        line = self._fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("line")
        return line

    def _headers(self) -> Headers:
        headers = Headers()
        last = ""
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return headers
            text = line.decode("latin-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and last:  # an obsolete folded continuation line
                headers[last] = f"{dict.__getitem__(headers, last)} {text.strip()}"
                continue
            name, separator, value = text.partition(":")
            if not separator:
                continue  # not a header line: skipped, as http.client's parser does
            last, value = name.strip().lower(), value.strip()
            headers[last] = f"{dict.__getitem__(headers, last)}, {value}" if last in headers else value
        raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")

    def _finish(self) -> None:
        self._done = True
        self._fp.close()  # the buffered reader only: the socket stays open for the next request

    def _next_chunk(self) -> int:
        """The next chunk's size, after the CRLF ending the last one; at the last chunk (size 0)
        its trailer lines are read too."""
        if self._crlf_due:
            self._line()
            self._crlf_due = False
        line = self._line()
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise http.client.IncompleteRead(b"") from None
        if size == 0:
            while self._line() not in (b"\r\n", b"\n", b""):
                pass
        return size

    def read1(self, size: int) -> bytes:
        """What one network read brings, at most ``size`` bytes; ``b""`` at the body's end."""
        if self._done:
            return b""
        if self._chunked and self._left == 0:
            self._left = self._next_chunk()
            if self._left == 0:
                self._finish()
                return b""
        if self._left is None:  # up to the connection's end
            data = self._fp.read1(size)
            if not data:
                self._finish()
            return data
        data = self._fp.read1(min(size, self._left))
        if not data:
            raise http.client.IncompleteRead(b"", self._left)
        self._left -= len(data)
        if self._left == 0:
            if self._chunked:
                self._crlf_due = True
            else:
                self._finish()
        return data

    def read(self) -> bytes:
        """The rest of the body."""
        if not self._done and not self._chunked and self._left is not None:
            data = self._fp.read(self._left)
            if len(data) < self._left:
                raise http.client.IncompleteRead(data, self._left - len(data))
            self._finish()
            return data
        parts = []
        while chunk := self.read1(65536):
            parts.append(chunk)
        return b"".join(parts)

    def isclosed(self) -> bool:
        return self._done

    def close(self) -> None:
        self._done = True
        self._fp.close()
