"""Request framing: the bytes of one request read through h11, strict where h11 is lenient.

Where h11 is lenient, ``Parser`` is strict, refusing with ``400`` what gunicorn refuses: CR and LF
appear in a request head or in chunked framing only as CRLF line ends, and no other control byte
appears there at all; a few empty lines before a request line are skipped, more are refused; one
Content-Length field with one number, or one chunked Transfer-Encoding, never both, and no
Transfer-Encoding in HTTP/1.0; a chunk-size line is the size and well-formed extensions only;
trailers carry no framing, routing or credentials field; a method is an upper-case token.
"""

from __future__ import annotations

import re
from typing import Any

import h11

from minimcp.httpd.limits import MAX_EMPTY_LINES, MAX_HEAD, MAX_HEADERS, MAX_LINE, STATUS

#: Bytes that framing never holds (RFC 9110 §5.5 allows SP and HTAB, no other control, in a field
#: value); CR and LF are checked apart, as line ends.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: A method as gunicorn accepts one: an RFC 9110 token, upper case (methods are case-sensitive, and
#: a lower-case one is a front end's casefolding away from another), 3 to 20 characters, no ``#``.
_METHOD = re.compile(rb"[!$%&'*+\-.^_`|~0-9A-Z]{3,20}")
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
#: A chunk-size line without its CRLF (RFC 9112 §7.1.1): h11 takes anything after a ``;`` and
#: whitespace before the CRLF, which a strict front end reads as no chunk size at all.
_CHUNK_LINE = re.compile(rb"[0-9A-Fa-f]+(?:[ \t]*;[ \t]*" + _TOKEN
                         + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*")
#: Fields a trailer may not carry (RFC 9110 §6.5.1): they route, frame or authenticate the message,
#: and a front end that merges trailers into the head would act on them.
_FORBIDDEN_TRAILERS = frozenset({b"host", b"content-length", b"transfer-encoding", b"trailer", b"authorization", b"te"})


class BadRequest(Exception):
    """The bytes on the wire are not an HTTP request this server accepts; answered, then closed."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def _environ_key(name: bytes) -> str:
    """The environ key of a header field name as sent (``Mcp-Method`` -> ``HTTP_MCP_METHOD``).

    Clients repeat the same few names on every request, so keys are remembered (up to
    ``_MAX_KEYS`` of them); converting costs more than the rest of a header together.
    """
    if b"_" in name:  # it would alias another name once dashes become underscores
        raise BadRequest(STATUS[400], f"malformed header name {name[:40]!r}")
    key = name.decode("ascii").upper().replace("-", "_")
    if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        key = "HTTP_" + key
    if len(_ENVIRON_KEYS) < _MAX_KEYS:
        _ENVIRON_KEYS[name] = key
    return key


#: Shared by every worker without a lock: a dict store is atomic, and two threads racing past the
#: cap add an entry or two more, which is harmless.
_ENVIRON_KEYS: dict[bytes, str] = {}
_MAX_KEYS = 512


class Parser:
    """One request's bytes through h11, strict where h11 is lenient.

    h11 takes a bare LF for a line end in a head and in trailers, lets a bare CR or a NUL through
    in a chunk extension, and unfolds obsolete line folding; here these are refused (RFC 9112 allows
    the first two nowhere, and lets a server refuse the third), and a front end that splits lines only at
    CRLF would frame the same bytes differently (the desync that smuggles a second request). So every
    byte h11 consumes as framing (the head, chunk-size lines, the CRLF after chunk data, trailers) is
    checked before its event is used. ``_framing`` holds what was fed and not yet checked; it is kept
    while the head arrives and through a chunked body (a Content-Length body has no framing and is
    not copied), and is ``None`` otherwise.
    """

    __slots__ = ("h11", "started", "content_length", "headers", "_framing", "_empty_lines", "_held")

    def __init__(self, leftover: bytes = b"") -> None:
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.started = False  # a byte of the request itself (not an empty line before it) arrived
        self.content_length: int | None = None  # of the body, known with the head; None: chunked
        self.headers: dict[str, str] = {}  # the head's fields as environ keys and values
        self._framing: bytearray | None = bytearray()
        self._empty_lines = 0
        self._held = b""  # a CR that may start an empty line
        if leftover:
            self.feed(leftover)

    def feed(self, data: bytes) -> None:
        """Take bytes read from the client (``b""``: it closed its side)."""
        if not self.started and data:
            data = self._skip_empty_lines(data)
            if not data:
                return
            self.started = True
        if self._framing is not None:
            self._framing += data
        self.h11.receive_data(data)

    def _skip_empty_lines(self, data: bytes) -> bytes:
        data = self._held + data
        self._held = b""
        while data[:2] == b"\r\n":
            self._empty_lines += 1
            if self._empty_lines > MAX_EMPTY_LINES:
                raise BadRequest(STATUS[400], "too many empty lines before the request line")
            data = data[2:]
        if data == b"\r":
            self._held, data = data, b""
        return data

    def leftover(self) -> bytes:
        """What the client sent past this request: the start of the next one (pipelining)."""
        return self._held + self.h11.trailing_data[0]

    def next_event(self) -> Any:
        """h11's next event (``h11.NEED_DATA`` when more bytes must come), its framing checked."""
        try:
            event = self.h11.next_event()
        except h11.RemoteProtocolError as exc:
            raise self._refusal(exc) from None
        if event is h11.NEED_DATA or self._framing is None:
            return event
        used = len(self._framing) - len(self.h11.trailing_data[0])
        framing = self._framing[:used]
        del self._framing[:used]
        kind = type(event)
        if kind is h11.Data:
            del framing[len(framing) - len(event.data):]  # a chunk's data follows its framing
        if not framing.count(b"\r") == framing.count(b"\n") == framing.count(b"\r\n"):
            raise BadRequest(STATUS[400], "CR or LF in a request head or chunked framing, other than as a CRLF line end")
        if _CONTROL.search(framing):
            raise BadRequest(STATUS[400], "a control character in a request head or chunked framing")
        if b"\n " in framing or b"\n\t" in framing:
            raise BadRequest(STATUS[400], "obsolete line folding (a field line that starts with whitespace)")
        if kind is h11.Request:
            self._check_head(event, framing)
            if self.content_length is not None:
                self._framing = None
        elif kind is h11.Data:
            if event.chunk_start:
                self._check_chunk_line(framing)
        elif kind is h11.EndOfMessage:
            self._check_chunk_line(framing)
            for name, _ in event.headers:
                if name in _FORBIDDEN_TRAILERS:
                    raise BadRequest(STATUS[400], f"a {name.decode()} field in the trailers")
            self._framing = None
        return event

    @staticmethod
    def _check_chunk_line(framing: bytearray) -> None:
        """The chunk-size line in ``framing`` (after the CRLF that ends the previous chunk's data,
        if any) is a size and well-formed extensions, nothing else."""
        start = 2 if framing[:2] == b"\r\n" else 0
        if not _CHUNK_LINE.fullmatch(framing, start, framing.find(b"\r\n", start)):
            raise BadRequest(STATUS[400], "malformed chunk-size line (whitespace after the size, "
                                           "or an extension that is not name[=value])")

    def _refusal(self, exc: h11.RemoteProtocolError) -> BadRequest:
        status = exc.error_status_hint
        if status == 501:
            # h11's hint for a Transfer-Encoding other than one "chunked": chunked is then not the
            # final coding, and RFC 9112 section 6.3 says 400 (as gunicorn answers).
            status = 400
        if status == 431 and self._framing is not None and b"\n" not in self._framing[:MAX_LINE]:
            status = 414  # it is the request line that never ended
        return BadRequest(STATUS.get(status, STATUS[400]), str(exc))

    def _check_head(self, request: h11.Request, head: bytearray) -> None:
        """What RFC 9112 lets a server refuse and h11 accepts; ``head`` is the head as received."""
        if request.http_version not in (b"1.1", b"1.0"):
            raise BadRequest(STATUS[505], "HTTP/1.0 and HTTP/1.1 only")
        if not _METHOD.fullmatch(request.method):
            raise BadRequest(STATUS[400], "the method must be an upper-case token of 3 to 20 characters")
        self._check_content_length(head)
        if len(request.target) > MAX_LINE:
            raise BadRequest(STATUS[414], "request target too long")
        fields = request.headers.raw_items()
        if len(fields) > MAX_HEADERS:
            raise BadRequest(STATUS[431], "too many header fields")
        headers = self.headers
        for name, value in fields:
            if len(name) + len(value) + 2 > MAX_LINE:
                raise BadRequest(STATUS[431], "header line too long")
            key = _ENVIRON_KEYS.get(name) or _environ_key(name)
            text = value.decode("latin-1")
            # h11 refused a second Host; a field of one value (Content-Type) may not repeat either,
            # and the others are joined.
            if key in headers:
                if key == "CONTENT_TYPE":
                    raise BadRequest(STATUS[400], "more than one Content-Type field")
                headers[key] = headers[key] + "," + text
            else:
                headers[key] = text
        expect = headers.get("HTTP_EXPECT")
        if expect is not None and expect.lower() != "100-continue":
            raise BadRequest(STATUS[417], "the only expectation understood is 100-continue")
        chunked = "HTTP_TRANSFER_ENCODING" in headers  # h11 accepts "chunked" only, once
        if chunked and "CONTENT_LENGTH" in headers:
            raise BadRequest(STATUS[400], "both Content-Length and Transfer-Encoding")
        if chunked and request.http_version == b"1.0":
            raise BadRequest(STATUS[400], "Transfer-Encoding in an HTTP/1.0 request")
        # h11 checked the length: digits, at most 20 of them; _check_content_length, that it came once.
        self.content_length = None if chunked else int(headers.get("CONTENT_LENGTH", 0))

    @staticmethod
    def _check_content_length(head: bytearray) -> None:
        """One Content-Length field holding one number. h11 merges repeats of one value (two fields,
        or the list ``5, 5``) into one; a front end that refuses them, or reads the first of
        two, frames the body differently, so both are refused, as gunicorn does."""
        lowered = head.lower()
        at = lowered.find(b"\ncontent-length:")
        if at < 0:
            return
        if lowered.find(b"\ncontent-length:", at + 1) >= 0:
            raise BadRequest(STATUS[400], "more than one Content-Length field")
        if b"," in head[at:head.find(b"\r\n", at)]:
            raise BadRequest(STATUS[400], "a list in the Content-Length field")
