"""Request framing: the bytes of one request, read by h11 or by llhttp, strict either way.

Two parsers give the same verdicts (the framing tests run against both): ``H11Parser`` (h11,
pure Python, always there) and ``HttptoolsParser`` (llhttp through httptools, when installed:
the ``speed`` extra). ``PARSERS`` holds those available; ``WSGIServer`` takes the C one when it
is there. Both refuse with ``400`` what gunicorn refuses: CR and LF appear in a request head or
in chunked framing only as CRLF line ends, and no other control byte appears there at all; a
few empty lines before a request line are skipped, more are refused; one Content-Length field
with one number, or one chunked Transfer-Encoding, never both, and no Transfer-Encoding in
HTTP/1.0; a chunk-size line is the size and well-formed extensions only; trailers carry no
framing, routing or credentials field; a method is an upper-case token.

What a parser yields, from ``next_event()``: ``NEED_DATA`` (more bytes must come), then one
``Head``, then the body as ``bytes`` pieces, then ``END``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any, Union

import h11

try:
    import httptools
except ImportError:  # the speed extra is not installed: h11 alone
    httptools = None  # type: ignore[assignment]  # an optional module; PARSERS below checks for it

from minimcp.httpd.limits import MAX_EMPTY_LINES, MAX_HEAD, MAX_HEADERS, MAX_LINE, STATUS

#: Bytes that framing never holds once its CRLF line ends are taken out (RFC 9110 §5.5 allows SP
#: and HTAB, no other control, in a field value; CR and LF belong to line ends only). Found by
#: deleting them (``bytes.translate``), which is a third of a regular expression's search.
_CONTROL = bytes([*range(0x00, 0x09), *range(0x0a, 0x20), 0x7f])
#: A field line that starts with whitespace: obsolete line folding.
_FOLDED = re.compile(rb"\n[ \t]")
#: Each Content-Length field and its value (framing is checked first, so a line ends at CRLF).
_CONTENT_LENGTH_FIELD = re.compile(rb"\ncontent-length:([^\r]*)", re.IGNORECASE)
#: A method as gunicorn accepts one: an RFC 9110 token, upper case (methods are case-sensitive, and
#: a lower-case one is a front end's casefolding away from another), 3 to 20 characters, no ``#``.
_METHOD = re.compile(rb"[!$%&'*+\-.^_`|~0-9A-Z]{3,20}")
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
#: A chunk-size line without its CRLF (RFC 9112 §7.1.1): h11 takes anything after a ``;`` and
#: whitespace before the CRLF, which a strict front end reads as no chunk size at all.
_CHUNK_LINE = re.compile(rb"[0-9A-Fa-f]+(?:[ \t]*;[ \t]*" + _TOKEN
                         + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*")
#: A request line (RFC 9112 §3) as h11 reads one; the method is checked apart, with ``_METHOD``.
_REQUEST_LINE = re.compile(rb"([^ ]+) ([\x21-\x7e]+) HTTP/([0-9]\.[0-9])")
_DIGITS = re.compile(rb"[0-9]{1,20}")
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


class Head:
    """A request's head as parsed: the request line's parts, as received."""

    __slots__ = ("method", "target", "http_version")

    def __init__(self, method: bytes, target: bytes, http_version: bytes) -> None:
        self.method = method
        self.target = target
        self.http_version = http_version


class _Mark:
    """A parser event that carries nothing (``NEED_DATA``, ``END``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NEED_DATA = _Mark("NEED_DATA")
END = _Mark("END")
Event = Union[Head, bytes, _Mark]


def _check_framing(framing: bytes | bytearray) -> None:
    """Framing bytes (a head, a chunk-size line, trailers) hold CR and LF only as CRLF line ends,
    no other control byte, and no obsolete line folding."""
    unframed = framing.replace(b"\r\n", b"")
    if len(unframed.translate(None, _CONTROL)) != len(unframed):  # one pass for the usual clean head
        if b"\r" in unframed or b"\n" in unframed:
            raise BadRequest(STATUS[400], "CR or LF in a request head or chunked framing, other than as a CRLF line end")
        raise BadRequest(STATUS[400], "a control character in a request head or chunked framing")
    if _FOLDED.search(framing):
        raise BadRequest(STATUS[400], "obsolete line folding (a field line that starts with whitespace)")


def _check_content_length(head: bytes | bytearray) -> None:
    """One Content-Length field holding one number. h11 merges repeats of one value (two fields,
    or the list ``5, 5``) into one; a front end that refuses them, or reads the first of
    two, frames the body differently, so both are refused, as gunicorn does."""
    values = _CONTENT_LENGTH_FIELD.findall(head)
    if len(values) > 1:
        raise BadRequest(STATUS[400], "more than one Content-Length field")
    if values and b"," in values[0]:
        raise BadRequest(STATUS[400], "a list in the Content-Length field")


class _StrictParser(ABC):
    """What both parsers share: the empty lines before a request line, and the head's rules that
    neither h11 nor llhttp enforces. ``headers`` are the head's fields as environ keys and values;
    ``content_length`` that of the body (``None``: chunked), both known with the head."""

    __slots__ = ("started", "content_length", "headers", "_empty_lines", "_held")

    def __init__(self) -> None:
        self.started = False  # a byte of the request itself (not an empty line before it) arrived
        self.content_length: int | None = None
        self.headers: dict[str, str] = {}
        self._empty_lines = 0
        self._held = b""  # a CR that may start an empty line

    def feed(self, data: bytes) -> None:
        """Take bytes read from the client."""
        if not self.started:
            data = self._skip_empty_lines(data)
            if not data:
                return
            self.started = True
        self._take(data)

    @abstractmethod
    def _take(self, data: bytes) -> None:
        """Parse ``data``, the request's own bytes (the empty lines before it are gone)."""

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

    def _check_head(self, head: Head, fields: list[tuple[bytes, bytes]], raw: bytes | bytearray) -> None:
        """What RFC 9112 lets a server refuse and the parser accepts; ``raw`` is the head as received."""
        if head.http_version not in (b"1.1", b"1.0"):
            raise BadRequest(STATUS[505], "HTTP/1.0 and HTTP/1.1 only")
        if not _METHOD.fullmatch(head.method):
            raise BadRequest(STATUS[400], "the method must be an upper-case token of 3 to 20 characters")
        _check_content_length(raw)
        if len(head.target) > MAX_LINE:
            raise BadRequest(STATUS[414], "request target too long")
        if len(fields) > MAX_HEADERS:
            raise BadRequest(STATUS[431], "too many header fields")
        headers = self.headers
        long_lines = len(raw) > MAX_LINE  # in a shorter head no line can be too long
        for name, value in fields:
            if long_lines and len(name) + len(value) + 2 > MAX_LINE:
                raise BadRequest(STATUS[431], "header line too long")
            key = _ENVIRON_KEYS.get(name) or _environ_key(name)
            text = value.decode("latin-1")
            # A field of one value (Host, Content-Type) may not repeat; the others are joined.
            if key in headers:
                if key in ("CONTENT_TYPE", "HTTP_HOST"):
                    raise BadRequest(STATUS[400], f"more than one {name.decode('latin-1')} field")
                headers[key] = headers[key] + "," + text
            else:
                headers[key] = text
        if head.http_version == b"1.1" and "HTTP_HOST" not in headers:
            raise BadRequest(STATUS[400], "no Host field in an HTTP/1.1 request")
        expect = headers.get("HTTP_EXPECT")
        if expect is not None and expect.lower() != "100-continue":
            raise BadRequest(STATUS[417], "the only expectation understood is 100-continue")
        coding = headers.get("HTTP_TRANSFER_ENCODING")
        if coding is not None:
            if coding.lower() != "chunked":
                # Chunked is then not the final coding: RFC 9112 section 6.3 says 400.
                raise BadRequest(STATUS[400], "a Transfer-Encoding other than one chunked")
            if "CONTENT_LENGTH" in headers:
                raise BadRequest(STATUS[400], "both Content-Length and Transfer-Encoding")
            if head.http_version == b"1.0":
                raise BadRequest(STATUS[400], "Transfer-Encoding in an HTTP/1.0 request")
            self.content_length = None
            return
        length = headers.get("CONTENT_LENGTH", "0")
        if not _DIGITS.fullmatch(length.encode("latin-1")):
            raise BadRequest(STATUS[400], "a Content-Length that is not a number of up to 20 digits")
        self.content_length = int(length)


class H11Parser(_StrictParser):
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

    __slots__ = ("h11", "_framing")

    def __init__(self, leftover: bytes = b"") -> None:
        super().__init__()
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self._framing: bytearray | None = bytearray()
        if leftover:
            self.feed(leftover)

    def _take(self, data: bytes) -> None:
        if self._framing is not None:
            self._framing += data
        self.h11.receive_data(data)

    def leftover(self) -> bytes:
        """What the client sent past this request: the start of the next one (pipelining)."""
        return self._held + self.h11.trailing_data[0]

    @property
    def waiting_for_continue(self) -> bool:
        """Whether the client waits for ``100 Continue`` before it sends the body."""
        return self.h11.they_are_waiting_for_100_continue

    def next_event(self) -> Event:
        """The next event, its framing checked."""
        event: Any  # one of h11's events, told apart by ``kind`` below, which mypy does not follow
        try:
            event = self.h11.next_event()
        except h11.RemoteProtocolError as exc:
            raise self._refusal(exc) from None
        if event is h11.NEED_DATA:
            return NEED_DATA
        kind = type(event)
        if self._framing is not None:
            used = len(self._framing) - len(self.h11.trailing_data[0])
            framing = self._framing[:used]
            del self._framing[:used]
            if kind is h11.Data:
                del framing[len(framing) - len(event.data):]  # a chunk's data follows its framing
            _check_framing(framing)
            if kind is h11.Request:
                head = Head(event.method, event.target, event.http_version)
                self._check_head(head, event.headers.raw_items(), framing)
                if self.content_length is not None:
                    self._framing = None
                return head
            if kind is h11.Data:
                if event.chunk_start:
                    self._check_chunk_line(framing)
            elif kind is h11.EndOfMessage:
                self._check_chunk_line(framing)
                for name, _ in event.headers:
                    if name in _FORBIDDEN_TRAILERS:
                        raise BadRequest(STATUS[400], f"a {name.decode()} field in the trailers")
                self._framing = None
        if kind is h11.Data:
            return bytes(event.data)
        return END  # EndOfMessage: h11 yields nothing else while a request is read

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


class _Fields:
    """llhttp's callbacks for a head: the header fields, in order."""

    __slots__ = ("fields",)

    def __init__(self) -> None:
        self.fields: list[tuple[bytes, bytes]] = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields.append((name, value.rstrip(b" \t")))  # llhttp keeps trailing whitespace


#: What llhttp is shown in place of a request line: it knows a fixed list of methods, and this
#: server takes any upper-case token, so the request line is read here and llhttp reads the fields.
_STAND_IN_LINE = b"GET / HTTP/1.1"


class HttptoolsParser(_StrictParser):
    """One request's bytes, the head read by llhttp (C), the rest here.

    A head ends at its first CRLF CRLF (a bare LF ends no line here), so it is found with one
    search, its framing checked as a whole, its request line matched here and its fields parsed
    by llhttp, which refuses malformed names and values. A Content-Length body is sliced from the
    bytes read; a chunked one, which MCP clients do not send, goes to ``H11Parser`` with the
    whole request, so chunked framing has one reader.
    """

    __slots__ = ("_buffer", "_remaining", "_waiting", "_chunked")

    def __init__(self, leftover: bytes = b"") -> None:
        super().__init__()
        self._buffer = b""
        self._remaining: int | None = None  # body bytes still to come; None while the head is read
        self._waiting = False  # the client asked for 100 Continue, and no body event was taken yet
        self._chunked: H11Parser | None = None
        if leftover:
            self.feed(leftover)

    def _take(self, data: bytes) -> None:
        if self._chunked is not None:
            self._chunked.feed(data)
        else:
            self._buffer += data

    def leftover(self) -> bytes:
        """What the client sent past this request: the start of the next one (pipelining)."""
        if self._chunked is not None:
            return self._chunked.leftover()
        return self._held + self._buffer

    @property
    def waiting_for_continue(self) -> bool:
        """Whether the client waits for ``100 Continue`` before it sends the body."""
        if self._chunked is not None:
            return self._chunked.waiting_for_continue
        return self._waiting

    def next_event(self) -> Event:
        if self._chunked is not None:
            return self._chunked.next_event()
        if self._remaining is None:
            return self._read_head()
        if self._remaining == 0:
            self._waiting = False
            return END
        if not self._buffer:
            return NEED_DATA
        data, self._buffer = self._buffer[:self._remaining], self._buffer[self._remaining:]
        self._remaining -= len(data)
        self._waiting = False
        return data

    def _read_head(self) -> Event:
        buffer = self._buffer
        if not buffer:
            return NEED_DATA  # the usual next request's parser, made before its bytes arrive
        end = buffer.find(b"\r\n\r\n", 0, MAX_HEAD)
        if end < 0:
            if len(buffer) > MAX_HEAD:
                status = 414 if b"\n" not in buffer[:MAX_LINE] else 431
                raise BadRequest(STATUS[status], "request head too long")
            # What came of the head so far, but a CR that the next read may pair with its LF.
            _check_framing(buffer[:-1] if buffer[-1:] == b"\r" else buffer)
            return NEED_DATA
        raw = buffer[:end + 4]
        _check_framing(raw)
        line_end = raw.find(b"\r\n")
        line = _REQUEST_LINE.fullmatch(raw, 0, line_end)
        if line is None:
            raise BadRequest(STATUS[400], "malformed request line")
        fields = _Fields()
        try:
            httptools.HttpRequestParser(fields).feed_data(_STAND_IN_LINE + raw[line_end:])
        except httptools.HttpParserUpgrade:
            pass  # llhttp stops at an Upgrade field, the fields read; it is an ordinary field here
        except httptools.HttpParserError as exc:
            raise BadRequest(STATUS[400], f"malformed header field: {exc}") from None
        head = Head(line[1], line[2], line[3])
        self._check_head(head, fields.fields, raw)
        if self.content_length is None:  # chunked
            self._chunked = H11Parser(buffer)
            return self._chunked.next_event()
        self._buffer = buffer[end + 4:]
        self._remaining = self.content_length
        self._waiting = head.http_version == b"1.1" and "HTTP_EXPECT" in self.headers  # its value was checked
        return head


Parser = Union[H11Parser, HttptoolsParser]

#: The parsers this process has, by name, the fastest first.
PARSERS: dict[str, type[Parser]] = {"h11": H11Parser}
if httptools is not None:
    PARSERS = {"httptools": HttptoolsParser, **PARSERS}
