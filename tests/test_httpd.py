"""minimcp's own HTTP/1.1 server (``minimcp.httpd.WSGIServer``), on the wire.

Every test runs a real ``WSGIServer`` on 127.0.0.1 (port 0) with a tiny WSGI app written here and
talks to it with raw sockets (``Wire``) or ``http.client``, so what is checked is the bytes a client
sees: keep-alive and pipelining, request body framing (Content-Length, chunked, 100-continue),
rejected requests, streamed responses, failures, and the connection limits and lifecycle.
"""

from __future__ import annotations

import http.client
import json
import logging
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from conftest import server_process, wait_for

from minimcp.httpd import WSGIServer
from minimcp.httpd.parsing import PARSERS

WAIT = 5.0  # every blocking wait in this file is bounded by this
HAND_BACK = 0.1  # seconds for a worker's hand-back to reach the loop, where a test needs the order of rest


# --- helpers -----------------------------------------------------------------------------------------
def httpd_threads() -> int:
    """How many worker threads every ``WSGIServer`` here has (busy or idle)."""
    return sum(t.name == "minimcp-httpd" for t in threading.enumerate())


@dataclass
class Reply:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: list[bytes] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k == name.lower()]
        return ",".join(values) if values else None


class Wire:
    """One raw client connection; reads responses byte-exactly (no retries, no reconnects)."""

    def __init__(self, port: int, timeout: float = WAIT, recv_buffer: int | None = None) -> None:
        self.sock = socket.socket()
        if recv_buffer is not None:  # set before connecting: it bounds the window the server sees
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""
        self.eof = False

    @property
    def local_port(self) -> int:
        return self.sock.getsockname()[1]

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def read_until(self, sep: bytes) -> bytes:
        while sep not in self.buf:
            if not self._fill():
                raise EOFError(f"connection closed before {sep!r}; got {self.buf!r}")
        data, _, self.buf = self.buf.partition(sep)
        return data + sep

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise EOFError(f"connection closed after {len(self.buf)} of {n} bytes")
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_to_eof(self) -> bytes:
        while self._fill():
            pass
        data, self.buf = self.buf, b""
        return data

    def read_head(self) -> Reply:
        head = self.read_until(b"\r\n\r\n").decode("latin-1")
        status_line, *lines = head[:-4].split("\r\n")
        version, code, reason = (status_line.split(" ", 2) + [""])[:3]
        assert version == "HTTP/1.1", status_line
        headers = []
        for line in lines:
            name, _, value = line.partition(":")
            headers.append((name.strip().lower(), value.strip()))
        return Reply(int(code), reason, headers)

    def read_chunk(self) -> bytes:
        """One chunk's data; ``b""`` for the last chunk (then its empty trailer section is read too)."""
        size_line = self.read_until(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        data = self.read_exact(size)
        assert self.read_exact(2) == b"\r\n"  # after data, or the end of an empty trailer section
        return data

    def read_response(self, head_request: bool = False) -> Reply:
        reply = self.read_head()
        if head_request or reply.status < 200 or reply.status in (204, 304):
            return reply
        if (reply.header("transfer-encoding") or "").lower() == "chunked":
            while True:
                chunk = self.read_chunk()
                if not chunk:
                    break  # this server sends no trailers
                reply.chunks.append(chunk)
            reply.body = b"".join(reply.chunks)
        elif reply.header("content-length") is not None:
            reply.body = self.read_exact(int(reply.header("content-length")))
        else:
            reply.body = self.read_to_eof()
        return reply

    def request(self, data: bytes, head_request: bool = False) -> Reply:
        self.send(data)
        return self.read_response(head_request)

    def closed_by_server(self) -> bool:
        """True when the server ends the connection with nothing more sent (bounded by the timeout)."""
        try:
            rest = self.read_to_eof()
        except socket.timeout:
            return False
        assert rest == b"", rest
        return True


def get(path: str = "/", *headers: str, version: str = "HTTP/1.1", method: str = "GET") -> bytes:
    lines = [f"{method} {path} {version}", "Host: test", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def post(path: str, body: bytes, *headers: str) -> bytes:
    head = "\r\n".join([f"POST {path} HTTP/1.1", "Host: test", f"Content-Length: {len(body)}", *headers])
    return head.encode("latin-1") + b"\r\n\r\n" + body


# --- apps ---------------------------------------------------------------------------------------------
def hello(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = f"hello {environ['PATH_INFO']}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The request body back, whole, with the path in a header."""
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Length", str(len(body))), ("X-Path", environ["PATH_INFO"])])
    return [body]


def ignore_body(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = f"ignored {environ['PATH_INFO']}".encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture(params=list(PARSERS))
def serve(request: pytest.FixtureRequest) -> Iterator[Callable[..., WSGIServer]]:
    """Start ``WSGIServer(app, "127.0.0.1", 0, **options)`` on a thread; shut down at teardown.
    Every test that serves runs once per request parser: both must give the same verdicts."""
    running: list[tuple[WSGIServer, threading.Thread]] = []

    def start(app: Any, **options: Any) -> WSGIServer:
        server = WSGIServer(app, "127.0.0.1", 0, parser=request.param, **options)
        thread = threading.Thread(target=server.serve_forever, name="test-httpd", daemon=True)
        thread.start()
        running.append((server, thread))
        return server

    yield start
    for server, thread in running:
        server.shutdown(WAIT)
        thread.join(WAIT)
        assert not thread.is_alive()


def assert_served(server: WSGIServer) -> None:
    """A fresh connection gets a normal answer (the server survived whatever came before)."""
    wire = Wire(server.port)
    try:
        reply = wire.request(get("/after"))
        assert reply.status == 200, reply
    finally:
        wire.close()


# --- keep-alive ----------------------------------------------------------------------------------------
def test_keep_alive_serves_many_requests_on_one_connection(serve):
    seen_ports = []

    def app(environ, start_response):
        seen_ports.append(environ["REMOTE_PORT"])
        return hello(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    for i in range(6):
        reply = wire.request(get(f"/r{i}"))
        assert (reply.status, reply.body) == (200, f"hello /r{i}".encode())
        assert reply.header("connection") is None  # HTTP/1.1 default: stays open
    assert seen_ports == [str(wire.local_port)] * 6
    wire.close()


def test_idle_keep_alive_connections_hold_no_thread(serve):
    """Idle connections wait in the selector: two hundred of them, each served once in turn, then
    all idle, leave the server with the workers the one-at-a-time requests needed (a worker waits
    ``KEEP_ALIVE_GRACE`` for a next request before it returns to the pool, so a few, not one; a
    thread per connection would be two hundred); each connection is still served."""
    server = serve(hello)
    before = httpd_threads()
    wires = [Wire(server.port) for _ in range(200)]
    for wire in wires:
        assert wire.request(get("/first")).status == 200
    assert httpd_threads() - before < 100
    for wire in wires:
        assert wire.request(get("/second")).body == b"hello /second"
        wire.close()


def test_http_client_reuses_its_connection(serve):
    seen_ports = []

    def app(environ, start_response):
        seen_ports.append(environ["REMOTE_PORT"])
        return echo(environ, start_response)

    server = serve(app)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
    try:
        for i in range(3):
            conn.request("POST", f"/p{i}", body=f"body {i}".encode())
            response = conn.getresponse()
            assert (response.status, response.read()) == (200, f"body {i}".encode())
            assert not response.will_close
        assert len(set(seen_ports)) == 1 and len(seen_ports) == 3
    finally:
        conn.close()


def test_http10_request_gets_connection_close(serve):
    server = serve(hello)
    wire = Wire(server.port)
    reply = wire.request(get("/", version="HTTP/1.0"))
    assert (reply.status, reply.body) == (200, b"hello /")
    assert reply.header("connection") == "close"
    assert wire.closed_by_server()


def test_http10_keep_alive_is_honoured(serve):
    server = serve(hello)
    wire = Wire(server.port)
    for path in ("/a", "/b"):
        reply = wire.request(get(path, "Connection: keep-alive", version="HTTP/1.0"))
        assert (reply.status, reply.body) == (200, f"hello {path}".encode())
        assert reply.header("connection") == "keep-alive"
    wire.close()


def test_http11_connection_close_closes(serve):
    server = serve(hello)
    wire = Wire(server.port)
    reply = wire.request(get("/", "Connection: close"))
    assert reply.status == 200
    assert reply.header("connection") == "close"
    assert wire.closed_by_server()


def test_pipelined_requests_are_answered_in_order(serve):
    server = serve(echo)
    wire = Wire(server.port)
    wire.send(post("/one", b"first body") + get("/two") + post("/three", b"3") + get("/four", "Connection: close"))
    replies = [wire.read_response() for _ in range(4)]
    assert [(r.header("x-path"), r.body) for r in replies] == [
        ("/one", b"first body"), ("/two", b""), ("/three", b"3"), ("/four", b"")]
    assert wire.closed_by_server()


# --- request bodies --------------------------------------------------------------------------------------
def test_content_length_body_is_read_by_the_app(serve):
    server = serve(echo)
    wire = Wire(server.port)
    body = bytes(range(256)) * 400  # 100 KiB, every byte value
    reply = wire.request(post("/", body))
    assert reply.body == body
    reply = wire.request(post("/again", b"x"))  # and the connection is still in step
    assert (reply.header("x-path"), reply.body) == ("/again", b"x")
    wire.close()


def test_partial_reads_and_readline_stop_at_the_body_end(serve):
    def app(environ, start_response):
        stream = environ["wsgi.input"]
        parts = [stream.read(3), stream.readline(), stream.readline(), stream.read(), stream.read()]
        body = repr(parts).encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    server = serve(app)
    wire = Wire(server.port)
    reply = wire.request(post("/", b"abcdef\nghi\njkl") + get("/next"))
    assert reply.body == repr([b"abc", b"def\n", b"ghi\n", b"jkl", b""]).encode()
    assert wire.read_response().status == 200  # the next request was not eaten as body
    wire.close()


def test_unread_small_body_is_skipped_for_the_next_request(serve):
    server = serve(ignore_body)
    wire = Wire(server.port)
    reply = wire.request(post("/a", b"x" * 5000))
    assert (reply.body, reply.header("connection")) == (b"ignored /a", None)
    reply = wire.request(b"POST /b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"4\r\nabcd\r\n0\r\n\r\n")
    assert reply.body == b"ignored /b"
    reply = wire.request(get("/c"))
    assert (reply.status, reply.body) == (200, b"ignored /c")
    wire.close()


def test_unread_body_over_64k_closes_the_connection(serve):
    server = serve(ignore_body)
    wire = Wire(server.port)
    try:
        wire.send(post("/big", b"x" * (200 * 1024)))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may close before the whole upload is in
    reply = wire.read_response()
    assert (reply.status, reply.body) == (200, b"ignored /big")
    assert reply.header("connection") == "close"  # announced, so the client does not reuse it
    assert wire.closed_by_server()
    assert_served(server)


def test_chunked_body_with_extensions_and_trailers(serve):
    seen = {}

    def app(environ, start_response):
        seen["content_length"] = environ.get("CONTENT_LENGTH")
        return echo(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    big = b"y" * 70000
    reply = wire.request(
        b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n"
        b"1;a;b=\"q\"\r\n \r\n"
        + b"%x\r\n" % len(big) + big + b"\r\n"
        b"0;last\r\nX-Trailer: one\r\nX-Other: two\r\n\r\n")
    assert reply.status == 200
    assert reply.body == b"hello " + big
    assert seen["content_length"] is None
    reply = wire.request(get("/next"))  # trailers were consumed: the next request parses
    assert (reply.status, reply.header("x-path")) == (200, "/next")
    wire.close()


def test_malformed_chunk_size_read_by_the_app_is_the_clients_error_and_ends_the_connection(serve):
    server = serve(echo)
    wire = Wire(server.port)
    reply = wire.request(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"zz\r\nhello\r\n0\r\n\r\n")
    assert reply.status == 400
    assert b"chunk header" in reply.body
    assert reply.header("connection") == "close"
    assert wire.closed_by_server()
    assert_served(server)


def test_malformed_chunked_body_left_unread_gets_one_response_then_close(serve):
    server = serve(ignore_body)
    wire = Wire(server.port)
    reply = wire.request(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"5\r\nhelloXX0\r\n\r\n")  # chunk data not followed by CRLF
    assert reply.status == 200
    assert wire.closed_by_server()  # no second, unsolicited response after the first
    assert_served(server)


def test_body_error_caught_by_the_app_does_not_desync_the_connection(serve):
    paths = []

    def app(environ, start_response):
        paths.append(environ["PATH_INFO"])
        try:
            environ["wsgi.input"].read()
        except Exception:
            start_response("400 Bad Request", [("Content-Length", "0")])
            return []
        start_response("200 OK", [("Content-Length", "0")])
        return []

    server = serve(app)
    wire = Wire(server.port)
    wire.send(b"POST /first HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"zz\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n")
    assert wire.read_response().status == 400
    assert wire.closed_by_server()
    assert paths == ["/first"]  # the bytes after the broken body were not taken for a request


# --- rejected requests ---------------------------------------------------------------------------------
BAD_REQUESTS = {
    "content-length and chunked": (
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n", 400),
    "transfer coding other than chunked": (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nab", 400),
    "invalid content-length": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400),
    "negative content-length": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400),
    "non-ascii digit content-length": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: \xb2\r\n\r\nab", 400),
    "conflicting content-lengths": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
                                    400),
    "underscore in header name": (b"GET / HTTP/1.1\r\nHost: t\r\nX_Forwarded: a\r\n\r\n", 400),
    "header line without colon": (b"GET / HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n", 400),
    "space before colon": (b"GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400),
    "obsolete line folding": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n  continued\r\n\r\n", 400),
    "malformed request line": (b"GET /\r\nHost: t\r\n\r\n", 400),
    "request line too long": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414),
    "header line too long": (b"GET / HTTP/1.1\r\nHost: t\r\nX-Long: " + b"b" * 9000 + b"\r\n\r\n", 431),
    "too many headers": (b"GET / HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(100))
                         + b"\r\n", 431),
    "unsupported version": (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
    # RFC 9112 strictness: each of these is accepted by a lenient parser, and some desync a front end.
    "bare LF ending a header line": (b"POST / HTTP/1.1\r\nHost: t\r\nX-Foo: a\nTransfer-Encoding: chunked\r\n\r\n"
                                     b"0\r\n\r\n", 400),
    "bare LF line ends throughout": (b"GET / HTTP/1.1\nHost: t\n\n", 400),
    "bare LF ending the request line": (b"GET / HTTP/1.1\nHost: t\r\n\r\n", 400),
    "bare CR in a header value": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n", 400),
    "NUL in a header value": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x00b\r\n\r\n", 400),
    "gzip before chunked": (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 400),
    "two transfer-encoding fields": (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                                     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    "transfer-encoding in HTTP/1.0": (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    "content-length of 5000 digits": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
                                      400),
    "two host fields": (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    "no host field in HTTP/1.1": (b"GET / HTTP/1.1\r\nX-A: 1\r\n\r\n", 400),
    "too many empty lines before the request line": (b"\r\n" * 9 + b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    "megabytes of empty lines": (b"\r\n" * 100_000, 400),
    "absolute-form target with user info": (b"GET http://user@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
                                            400),
    "absolute-form target of another scheme": (b"GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400),
    "authority-form target": (b"GET example.com:80 HTTP/1.1\r\nHost: example.com\r\n\r\n", 400),
    "method with a non-token character": (b"G@T / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    # Refused as gunicorn refuses them (issue 25): each is a desync risk behind a front end that
    # reads it the other way.
    "two identical content-length fields": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                                            b"Content-Length: 5\r\n\r\nhello", 400),
    "content-length beside Content-Length": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                                             b"content-length: 5\r\n\r\nhello", 400),
    "content-length list of one value": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 5\r\n\r\nhello", 400),
    "lower-case method": (b"get / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    "mixed-case method": (b"Get / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    "method with a #": (b"G#T / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    "method of two characters": (b"GE / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    "DEL in a header value": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x7fb\r\n\r\n", 400),
    "control character in a header value": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x01b\r\n\r\n", 400),
    "two content-type fields": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Type: a/b\r\nContent-Type: c/d\r\n"
                                b"Content-Length: 0\r\n\r\n", 400),
    "expectation other than 100-continue": (b"GET / HTTP/1.1\r\nHost: t\r\nExpect: teapot\r\n\r\n", 417),
}


@pytest.mark.parametrize("raw,status", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_rejected_request_gets_its_status_and_close(serve, raw, status):
    calls = []

    def app(environ, start_response):
        calls.append(environ["PATH_INFO"])
        return hello(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    try:
        wire.send(raw)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before all of it was read
    reply = wire.read_response()
    assert reply.status == status, reply
    assert reply.header("connection") == "close"
    assert wire.closed_by_server()
    assert calls == []  # the app never saw it
    assert_served(server)


#: Heads refused by a framing rule, and the reason told, by parser: where h11 or llhttp refuses a
#: head before the server's own rule does, its own words are the reason.
FRAMING_REASONS = {
    "bare CR": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n",
                {"httptools": b"other than as a CRLF line end", "h11": b"illegal header line"}),
    "LF CR": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\n\rX-B: b\r\n\r\n",
              {"httptools": b"other than as a CRLF line end", "h11": b"illegal header line"}),
    "bare LF": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\nX-B: b\r\n\r\n",
                {"httptools": b"other than as a CRLF line end", "h11": b"other than as a CRLF line end"}),
    "vertical tab": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x0bb\r\n\r\n",
                     {"httptools": b"a control character", "h11": b"illegal header line"}),
    "DEL": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x7fb\r\n\r\n",
            {"httptools": b"a control character", "h11": b"a control character"}),
    "folded line": (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\tcontinued\r\n\r\n",
                    {"httptools": b"obsolete line folding", "h11": b"obsolete line folding"}),
    "two content-lengths": (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nCONTENT-LENGTH: 1\r\n\r\nx",
                            {"httptools": b"Duplicate Content-Length", "h11": b"more than one Content-Length"}),
    "content-length list": (b"POST / HTTP/1.1\r\nHost: t\r\ncontent-length: 1,1\r\n\r\nx",
                            {"httptools": b"Invalid character in Content-Length", "h11": b"a list in the Content-Length"}),
    "long line in a long head": (b"GET / HTTP/1.1\r\nHost: t\r\nX-Long: " + b"b" * 8200 + b"\r\n\r\n",
                                 {"httptools": b"header line too long", "h11": b"header line too long"}),
}


@pytest.mark.parametrize("parser", list(PARSERS))
@pytest.mark.parametrize("raw,reasons", FRAMING_REASONS.values(), ids=FRAMING_REASONS.keys())
def test_framing_refusal_names_its_rule(parser, raw, reasons):
    server = WSGIServer(hello, "127.0.0.1", 0, parser=parser)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        reply = Wire(server.port).request(raw)
        assert reply.status in (400, 431), reply
        assert reasons[parser] in reply.body, reply.body
        assert_served(server)
    finally:
        server.shutdown(WAIT)
        thread.join(WAIT)


def test_head_of_many_short_lines_longer_than_a_line_is_served(serve):
    """A head over MAX_LINE bytes whose every field line is short is not taken for a long line."""
    server = serve(hello)
    fields = b"".join(b"X-Field-%d: %s\r\n" % (i, b"v" * 100) for i in range(90))
    reply = Wire(server.port).request(b"GET /many HTTP/1.1\r\nHost: t\r\n" + fields + b"\r\n")
    assert reply.status == 200, reply


BAD_CHUNKED_FRAMING = {
    "bare LF after a chunk size": b"2\nxx\r\n0\r\n\r\n",
    "bare LF in a chunk extension": b"2;\nxx\r\n0\r\n\r\n",
    "bare CR in a chunk extension": b"2;a\rb\r\nxx\r\n0\r\n\r\n",
    "NUL in a chunk extension": b"2;a\x00\r\nxx\r\n0\r\n\r\n",
    "whitespace before a chunk size": b" 2\r\nxx\r\n0\r\n\r\n",
    "chunk data not followed by CRLF": b"2\r\nxxYY0\r\n\r\n",
    "bare LF ending a trailer line": b"2\r\nxx\r\n0\r\nX-T: a\nX-U: b\r\n\r\n",
    "bare LF ending the trailer section": b"2\r\nxx\r\n0\r\n\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    "folded trailer line": b"2\r\nxx\r\n0\r\nX-T: a\r\n b\r\n\r\n",
    # Refused as gunicorn refuses them (issue 25).
    "whitespace after a chunk size": b"2 \r\nxx\r\n0\r\n\r\n",
    "tab after a chunk size": b"2\t\r\nxx\r\n0\r\n\r\n",
    "whitespace after a later chunk size": b"2\r\nxx\r\n1 \r\ny\r\n0\r\n\r\n",
    "whitespace after the last chunk size": b"2\r\nxx\r\n0 \r\n\r\n",
    "whitespace after a chunk extension": b"2;a=b \r\nxx\r\n0\r\n\r\n",
    "chunk extension with a space in its name": b"2;a b\r\nxx\r\n0\r\n\r\n",
    "unterminated quoted chunk extension": b'2;a="b\r\nxx\r\n0\r\n\r\n',
    "trailer line without a colon": b"2\r\nxx\r\n0\r\nNoColon\r\n\r\n",
    "content-length in the trailers": b"2\r\nxx\r\n0\r\nContent-Length: 2\r\n\r\n",
    "transfer-encoding in the trailers": b"2\r\nxx\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
    "host in the trailers": b"2\r\nxx\r\n0\r\nHost: elsewhere\r\n\r\n",
}


@pytest.mark.parametrize("chunks", BAD_CHUNKED_FRAMING.values(), ids=BAD_CHUNKED_FRAMING.keys())
def test_malformed_chunked_framing_is_refused_and_nothing_after_it_is_served(serve, chunks):
    paths = []

    def app(environ, start_response):
        paths.append(environ["PATH_INFO"])
        return echo(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    wire.send(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + get("/next"))
    reply = wire.read_response()
    assert (reply.status, reply.header("connection")) == (400, "close"), reply
    assert wire.closed_by_server()
    assert paths == ["/"]
    assert_served(server)


@pytest.mark.parametrize("chunks", BAD_CHUNKED_FRAMING.values(), ids=BAD_CHUNKED_FRAMING.keys())
def test_malformed_chunked_framing_left_unread_ends_the_connection_after_the_answer(serve, chunks):
    """The app answered without reading: skipping the body for the next request finds the framing
    bad, so the connection closes there, and what follows is not taken for a request."""
    paths = []

    def app(environ, start_response):
        paths.append(environ["PATH_INFO"])
        return ignore_body(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    wire.send(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + get("/next"))
    assert wire.read_response().status == 200
    assert wire.closed_by_server()
    assert paths == ["/"]
    assert_served(server)


@pytest.mark.parametrize("lengths", [("Content-Length: 5", "Content-Length: 5"), ("Content-Length: 5", "content-length: 5"),
                                     ("Content-Length: 5, 5",), ("Content-Length: 5,5",)],
                         ids=["two fields", "two spellings", "a list", "a list without space"])
def test_repeated_content_length_is_refused_and_the_pipelined_request_is_not_served(serve, lengths):
    paths = []

    def app(environ, start_response):
        paths.append(environ["PATH_INFO"])
        return echo(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    head = "\r\n".join(["POST /first HTTP/1.1", "Host: t", *lengths]).encode()
    wire.send(head + b"\r\n\r\nhello" + get("/second"))
    reply = wire.read_response()
    assert (reply.status, reply.header("connection")) == (400, "close"), reply
    assert b"Content-Length" in reply.body  # the message names the field
    assert wire.closed_by_server()
    assert paths == []
    assert_served(server)


def test_one_hundred_headers_are_accepted(serve):
    server = serve(hello)
    wire = Wire(server.port)
    reply = wire.request(b"GET / HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(99)) + b"\r\n")
    assert reply.status == 200
    wire.close()


# --- Expect: 100-continue ----------------------------------------------------------------------------
def test_100_continue_is_sent_when_the_app_reads_the_body(serve):
    server = serve(echo)
    wire = Wire(server.port)
    wire.send(b"POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    interim = wire.read_response()  # the client waits for it before sending the body
    assert (interim.status, interim.reason) == (100, "Continue")
    wire.send(b"hello")
    reply = wire.read_response()
    assert (reply.status, reply.body) == (200, b"hello")
    assert wire.request(get("/next")).header("x-path") == "/next"
    wire.close()


def test_no_100_continue_when_the_app_answers_without_reading(serve):
    server = serve(ignore_body)
    wire = Wire(server.port)
    wire.send(b"POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n")
    reply = wire.read_response()
    assert (reply.status, reply.body) == (200, b"ignored /up")  # the final answer, no interim one
    # The body was never asked for, so the server cannot know whether it follows: it closes rather
    # than take the client's next request for body bytes (or wait for a body that never comes).
    assert reply.header("connection") == "close"
    assert wire.closed_by_server()
    assert_served(server)


# --- streamed responses ------------------------------------------------------------------------------
def test_streamed_response_is_chunked_and_each_chunk_leaves_at_once(serve):
    go = threading.Event()
    second_yielded = threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])

        def events():
            yield b"data: one\n\n"
            go.wait(WAIT)
            second_yielded.set()
            yield b"data: two\n\n"

        return events()

    server = serve(app)
    wire = Wire(server.port)
    wire.send(get("/events"))
    head = wire.read_head()
    assert head.header("transfer-encoding") == "chunked"
    assert head.header("content-length") is None
    assert wire.read_chunk() == b"data: one\n\n"  # arrives while the generator is blocked
    assert not second_yielded.is_set()
    go.set()
    assert wire.read_chunk() == b"data: two\n\n"
    assert wire.read_chunk() == b""
    assert wire.request(get("/events")).body == b"data: one\n\ndata: two\n\n"  # still in step
    wire.close()


def test_streamed_response_to_http10_is_close_delimited(serve):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return iter([b"a", b"b", b"c"])

    server = serve(app)
    wire = Wire(server.port)
    reply = wire.request(get("/", "Connection: keep-alive", version="HTTP/1.0"))
    assert reply.header("transfer-encoding") is None
    assert reply.header("connection") == "close"
    assert reply.body == b"abc"  # read to EOF
    assert wire.eof


def test_app_content_length_is_kept_and_not_chunked(serve):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "6")])
        return iter([b"abc", b"", b"def"])

    server = serve(app)
    wire = Wire(server.port)
    reply = wire.request(get("/"))
    assert (reply.body, reply.header("transfer-encoding")) == (b"abcdef", None)
    assert wire.request(get("/")).body == b"abcdef"
    wire.close()


@pytest.mark.parametrize("size", [60_000, 200_000])
def test_responses_larger_than_the_socket_buffers_reach_a_slow_reader_whole(serve, size):
    """Responses to pipelined requests the client reads only once all are sent fill the socket's
    buffers (8 MB, past what the kernel grows a send buffer to), so sends wait on the client; each
    is finished, in order, as the client reads."""
    body = bytes(range(256)) * (size // 256) + b"end"

    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    server = serve(app)
    wire = Wire(server.port, recv_buffer=4096)  # a small window: the sends fill up
    count = 8_000_000 // size
    wire.send(get("/") * count)
    for _ in range(count):
        reply = wire.read_response()
        assert (reply.status, len(reply.body), reply.body == body) == (200, len(body), True)
    wire.close()


def test_empty_body_without_length_is_a_valid_chunked_response(serve):
    def app(environ, start_response):
        start_response("200 OK", [])
        return []

    server = serve(app)
    wire = Wire(server.port)
    for _ in range(2):
        reply = wire.request(get("/"))
        assert (reply.status, reply.body, reply.header("transfer-encoding")) == (200, b"", "chunked")
    wire.close()


def test_write_callable_including_an_empty_write(serve):
    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"a")
        write(b"")  # must not end the chunked body early
        write(b"b")
        return [b"c"]

    server = serve(app)
    wire = Wire(server.port)
    assert wire.request(get("/")).body == b"abc"
    assert wire.request(get("/")).body == b"abc"  # and the framing stayed in step
    wire.close()


def test_app_hop_by_hop_headers_are_dropped(serve):
    def app(environ, start_response):
        start_response("200 OK", [("Transfer-Encoding", "gzip"), ("Keep-Alive", "timeout=1"), ("X-Kept", "1")])
        return [b"body"]

    server = serve(app)
    wire = Wire(server.port)
    reply = wire.request(get("/"))
    assert reply.header("transfer-encoding") == "chunked"
    assert reply.header("keep-alive") is None and reply.header("x-kept") == "1"
    assert reply.body == b"body"
    wire.close()


def test_head_gets_headers_but_no_body(serve):
    def streamed(environ, start_response):
        start_response("200 OK", [])
        return iter([b"streamed body"])

    for app in (hello, streamed):
        server = serve(app)
        wire = Wire(server.port)
        reply = wire.request(get("/x", method="HEAD"), head_request=True)
        assert reply.status == 200
        if app is hello:
            assert reply.header("content-length") == str(len(b"hello /x"))
        # no body bytes: the next response starts right where the head ended
        reply = wire.request(get("/y"))
        assert reply.status == 200 and reply.body in (b"hello /y", b"streamed body")
        wire.close()


@pytest.mark.parametrize("status", ["204 No Content", "304 Not Modified"])
def test_no_body_statuses_get_no_body_and_no_chunked_framing(serve, status):
    def app(environ, start_response):
        start_response(status, [])
        return iter([b"should not be sent"])

    server = serve(app)
    wire = Wire(server.port)
    reply = wire.request(get("/"))
    assert reply.status == int(status[:3])
    assert reply.header("transfer-encoding") is None
    wire.send(get("/"))
    assert wire.read_until(b"\r\n").startswith(b"HTTP/1.1 " + status[:3].encode())  # nothing in between
    wire.close()


def test_client_disconnect_mid_stream_closes_the_generator(serve):
    aborted = threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])

        def events():
            deadline = time.monotonic() + WAIT
            try:
                yield b"first"
                while time.monotonic() < deadline:
                    time.sleep(0.01)
                    yield b"more"
            except GeneratorExit:
                aborted.set()
                raise

        return events()

    server = serve(app)
    wire = Wire(server.port)
    wire.send(get("/"))
    wire.read_head()
    assert wire.read_chunk() == b"first"
    wire.close()
    assert aborted.wait(WAIT)
    assert_served(server)


# --- app failures ---------------------------------------------------------------------------------
def test_app_raising_before_start_response_gets_500(serve):
    def app(environ, start_response):
        if environ["PATH_INFO"] == "/boom":
            raise RuntimeError("boom")
        return hello(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    reply = wire.request(get("/boom"))
    assert reply.status == 500
    assert b"boom" not in reply.body  # no details leak to the client
    assert reply.header("connection") == "close"
    assert wire.closed_by_server()
    assert_served(server)


def test_app_raising_on_first_iteration_gets_500(serve):
    def app(environ, start_response):
        start_response("200 OK", [])

        def body():
            raise RuntimeError("boom")
            yield b""  # pragma: no cover

        return body()

    server = serve(app)
    wire = Wire(server.port)
    assert wire.request(get("/")).status == 500
    assert wire.closed_by_server()


def test_app_raising_after_headers_were_sent_closes_the_connection(serve):
    def app(environ, start_response):
        if environ["PATH_INFO"] == "/after":
            return hello(environ, start_response)
        start_response("200 OK", [])

        def body():
            yield b"partial"
            raise RuntimeError("boom")

        return body()

    server = serve(app)
    wire = Wire(server.port)
    wire.send(get("/"))
    raw = wire.read_to_eof()
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n")
    assert raw.endswith(b"\r\n\r\n7\r\npartial\r\n")  # no terminating chunk: the client sees it broke
    assert_served(server)


# --- limits and lifecycle -------------------------------------------------------------------------
class Holding:
    """An app whose ``/hold`` requests wait (each at most ``WAIT``) until ``release()``: connections
    that hold a request in progress. Other paths answer at once, as ``hello``."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.held = threading.Semaphore(0)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ["PATH_INFO"] == "/hold":
            self.held.release()
            self.released.wait(WAIT)
        return hello(environ, start_response)

    def wait_held(self, count: int) -> None:
        for _ in range(count):
            assert self.held.acquire(timeout=WAIT), "a /hold request did not reach the app"

    def release(self) -> None:
        self.released.set()


def test_max_connections_refuses_with_503_only_when_every_connection_holds_a_request(serve):
    app = Holding()
    server = serve(app, max_connections=2)
    first, second = Wire(server.port), Wire(server.port)
    for wire in (first, second):
        wire.send(get("/hold"))
    app.wait_held(2)
    third = Wire(server.port)
    third.send(get("/third"))
    reply = third.read_response()
    assert reply.status == 503
    assert reply.header("connection") == "close"
    assert reply.header("retry-after") == "1"
    assert third.closed_by_server()
    app.release()
    for wire in (first, second):  # the requests in progress were not cut short
        assert wire.read_response().body == b"hello /hold"
    assert second.request(get("/still")).body == b"hello /still"
    fourth = Wire(server.port)  # the two are idle now: one makes room
    assert fourth.request(get("/fourth")).body == b"hello /fourth"
    for wire in (first, second, fourth):
        wire.close()


def test_a_request_past_max_workers_waits_for_a_free_one_instead_of_a_503(serve):
    app = Holding()
    server = serve(app, max_workers=1, max_connections=4)
    first, second, third = Wire(server.port), Wire(server.port), Wire(server.port)
    first.send(get("/hold"))
    app.wait_held(1)
    second.send(get("/second"))
    third.send(get("/third"))
    time.sleep(HAND_BACK)  # both reached the loop, which has no worker to give them
    app.release()
    assert first.read_response().body == b"hello /hold"
    assert second.read_response().body == b"hello /second"
    assert third.read_response().body == b"hello /third"
    for wire in (first, second, third):  # each still kept alive
        assert wire.request(get("/again")).status == 200
        wire.close()


def test_a_request_that_finds_no_free_worker_within_wait_timeout_gets_503(serve):
    app = Holding()
    server = serve(app, max_workers=1, max_connections=4, wait_timeout=0.2)
    first, second = Wire(server.port), Wire(server.port)
    first.send(get("/hold"))
    app.wait_held(1)
    second.send(get("/second"))
    reply = second.read_response()
    assert (reply.status, reply.header("connection")) == (503, "close")
    assert second.closed_by_server()
    app.release()
    assert first.read_response().body == b"hello /hold"
    first.close()
    assert_served(server)


def test_a_request_waiting_for_a_worker_at_shutdown_is_told_503(serve):
    app = Holding()
    server = serve(app, max_workers=1)
    first, second = Wire(server.port), Wire(server.port)
    first.send(get("/hold"))
    app.wait_held(1)
    second.send(get("/second"))
    time.sleep(HAND_BACK)
    stopper = threading.Thread(target=server.shutdown, args=(WAIT,), kwargs={"drain": True}, daemon=True)
    stopper.start()
    assert second.read_response().status == 503
    app.release()
    assert first.read_response().body == b"hello /hold"  # the running one drains
    stopper.join(WAIT)
    for wire in (first, second):
        wire.close()


def test_a_connection_taken_again_by_a_worker_keeps_its_wait_for_a_next_request_bounded(serve):
    """A connection's read bound is set once, when it is accepted, and outlasts its trips between
    the loop and the workers: each time a worker takes it again and answers a second request, the
    worker waits ``KEEP_ALIVE_GRACE`` for a third and then hands it back. Were the bound lost, the
    worker would wait on, the connection would hold a request, and the newcomer below would be
    refused rather than make room."""
    server = serve(hello, max_connections=1)
    wire = Wire(server.port)
    for _ in range(3):  # accepted, then taken again twice after a hand-back
        for _ in range(2):  # the second request makes the worker wait for a next one
            assert wire.request(get("/")).status == 200
        time.sleep(HAND_BACK)
    newcomer = Wire(server.port)
    assert newcomer.request(get("/new")).body == b"hello /new"
    assert wire.closed_by_server()
    newcomer.close()
    wire.close()


def test_at_max_connections_the_longest_idle_connection_makes_room(serve, caplog):
    server = serve(hello, max_connections=3)
    a, b, c = Wire(server.port), Wire(server.port), Wire(server.port)
    # A worker hands its connection back to the loop just after sending the answer; the pauses
    # let each hand-back land before the next request, so the order of rest is the test's order.
    for wire in (a, b, c):
        assert wire.request(get("/")).status == 200
        time.sleep(HAND_BACK)
    assert a.request(get("/again")).status == 200  # a is busy or idle since now: b has been idle longest
    time.sleep(HAND_BACK)
    with caplog.at_level(logging.WARNING, logger="minimcp.httpd"):
        d = Wire(server.port)
        assert d.request(get("/d")).body == b"hello /d"
    assert b.closed_by_server()  # closed with nothing sent: it held no request
    assert [r.getMessage() for r in caplog.records if "longest-idle" in r.getMessage()], caplog.records
    e = Wire(server.port)
    assert e.request(get("/e")).body == b"hello /e"
    assert c.closed_by_server()  # now c has: a's last request came after c's
    for wire in (a, d):  # the others keep their connections
        assert wire.request(get("/more")).status == 200
    for wire in (a, b, c, d, e):
        wire.close()


def test_a_request_head_still_arriving_is_not_taken_for_idle(serve):
    server = serve(hello, max_connections=2)
    idle, arriving = Wire(server.port), Wire(server.port)
    assert idle.request(get("/")).status == 200
    assert arriving.request(get("/")).status == 200
    arriving.send(b"GET /slow HTTP/1.1\r\nHo")  # younger than idle's answer, but begun
    assert wait_for(lambda: Wire(server.port).request(get("/new")).status == 200)
    assert idle.closed_by_server()
    arriving.send(b"st: t\r\n\r\n")
    assert arriving.read_response().body == b"hello /slow"
    for wire in (idle, arriving):
        wire.close()


def test_only_begun_heads_at_max_connections_refuse_the_newcomer(serve):
    server = serve(hello, max_connections=1)
    arriving = Wire(server.port)
    arriving.send(b"GET /slow HTTP/1.1\r\n")

    def refused() -> bool:
        wire = Wire(server.port)
        try:
            return wire.request(get("/new")).status == 503
        finally:
            wire.close()

    assert wait_for(refused)  # once the loop has read the begun head
    arriving.send(b"Host: t\r\n\r\n")
    assert arriving.read_response().body == b"hello /slow"
    arriving.close()


def test_idle_connections_from_many_addresses_within_their_caps_do_not_lock_out_a_new_client(serve):
    """Issue 25's flood, scaled down: every connection the server allows, from four addresses at
    their per-address cap, each idle after one request; a client from a fifth address is served."""
    server = serve(hello, max_connections=8, max_connections_per_peer=2)
    held = []
    for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"):
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT, source_address=(address, 0))
            sock.sendall(get("/"))
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
            held.append(sock)
    newcomer = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT, source_address=("127.0.0.6", 0))
    try:
        newcomer.sendall(get("/new"))
        assert newcomer.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
        assert held[0].recv(65536) == b""  # the first of the idle ones was closed for it
    finally:
        newcomer.close()
        for sock in held:
            sock.close()


def test_per_peer_cap_refuses_one_address_and_serves_another(serve):
    server = serve(hello, max_connections_per_peer=2)
    first, second = Wire(server.port), Wire(server.port)
    for wire in (first, second):
        assert wire.request(get("/")).status == 200
    third = Wire(server.port)
    reply = third.request(get("/third"))
    assert (reply.status, reply.header("retry-after"), reply.header("connection")) == (503, "1", "close")
    assert third.closed_by_server()
    other = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT, source_address=("127.0.0.2", 0))
    try:
        other.sendall(get("/other"))
        assert other.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")  # another address has its own count
    finally:
        other.close()
    first.close()
    assert wait_for(lambda: Wire(server.port).request(get("/again")).status == 200)
    second.close()


def test_refusals_are_logged_once_per_interval_with_a_count(serve, caplog):
    server = serve(hello, max_connections_per_peer=1)
    held = Wire(server.port)
    assert held.request(get("/")).status == 200
    with caplog.at_level(logging.WARNING, logger="minimcp.httpd"):
        for _ in range(5):
            wire = Wire(server.port)
            assert wire.request(get("/")).status == 503
            wire.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "minimcp.httpd"]
    assert len(lines) == 1 and "refusing connections (1 since the last report)" in lines[0], lines
    held.close()


def test_a_refused_client_that_trickles_bytes_does_not_hold_up_accepting(serve):
    """The lingering read of a refused connection is the selector's, bounded in total: a refused
    client sending a byte every 50 ms while it lasts delays nobody else."""
    server = serve(hello, max_connections_per_peer=1)
    held = Wire(server.port)
    assert held.request(get("/")).status == 200
    trickler = Wire(server.port)
    assert trickler.read_response().status == 503  # refused before it sent anything
    stop = threading.Event()

    def trickle() -> None:
        deadline = time.monotonic() + 2 * WAIT
        while not stop.wait(0.05) and time.monotonic() < deadline:
            try:
                trickler.send(b"x")
            except OSError:
                return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        refused = Wire(server.port)
        assert refused.request(get("/")).status == 503  # answered while the trickle goes on
        held.close()
        assert wait_for(lambda: Wire(server.port).request(get("/next")).status == 200)
    finally:
        stop.set()
        thread.join(WAIT)
    assert trickler.closed_by_server()  # its lingering close ended on its own


def test_header_timeout_is_total_not_per_read(serve):
    """A head trickled one header line every 50 ms never completes: it is answered 408 after
    ``header_timeout`` in all, although no single read waited long."""
    server = serve(hello, header_timeout=0.5, idle_timeout=5)
    wire = Wire(server.port)
    wire.send(b"GET / HTTP/1.1\r\nHost: t\r\n")
    started = time.monotonic()
    for i in range(200):  # 10 s of trickling at most, until the server answers
        if select.select([wire.sock], [], [], 0)[0]:
            break
        try:
            wire.send(b"X-Slow-%d: v\r\n" % i)
        except OSError:
            break
        time.sleep(0.05)
    assert time.monotonic() - started < 5
    reply = wire.read_response()
    assert (reply.status, reply.header("connection")) == (408, "close")
    assert_served(server)


def test_a_body_slower_than_the_keep_alive_grace_is_still_read_within_the_body_timeout(serve):
    """A body's bytes are first awaited for ``KEEP_ALIVE_GRACE`` (the socket's standing read bound);
    one that comes later, within ``body_timeout``, is read all the same."""
    server = serve(echo, body_timeout=WAIT)
    wire = Wire(server.port)
    for _ in range(2):
        wire.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        time.sleep(HAND_BACK)  # past the grace: the rest comes after the first, grace-bounded read
        reply = wire.request(b"defghij")
        assert (reply.status, reply.body) == (200, b"abcdefghij")
    wire.close()


def test_body_timeout_answers_408_and_closes(serve):
    server = serve(echo, body_timeout=0.3)
    wire = Wire(server.port)
    wire.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")  # seven bytes never come
    reply = wire.read_response()
    assert (reply.status, reply.header("connection")) == (408, "close")
    assert wire.closed_by_server()
    assert_served(server)


SERVER_WITH_FEW_DESCRIPTORS = """
import resource, sys
from minimcp.httpd import WSGIServer
def hello(environ, start_response):
    start_response("200 OK", [("Content-Length", "2")])
    return [b"ok"]
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
server = WSGIServer(hello, "127.0.0.1", 0, max_connections=1000, max_connections_per_peer=None)
print(f"http://127.0.0.1:{server.port}", flush=True)
server.run()
"""


def test_out_of_descriptors_new_clients_get_503_and_service_resumes():
    wires: list[Wire] = []
    with server_process([sys.executable, "-c", SERVER_WITH_FEW_DESCRIPTORS]) as server:
        try:
            statuses = []
            for _ in range(100):  # the server has 64 descriptors
                wire = Wire(server.port)
                wires.append(wire)
                statuses.append(wire.request(get("/")).status)
                if statuses[-1] == 503:
                    break
            assert statuses[-1] == 503 and set(statuses[:-1]) == {200}, statuses
        finally:
            for wire in wires:
                wire.close()
        assert wait_for(lambda: Wire(server.port).request(get("/again")).status == 200)
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(WAIT) == 0
        log = server.output()
        assert log.count("out of file descriptors") == 1, log  # once per interval, however many


def test_idle_keep_alive_connection_is_closed_after_idle_timeout(serve):
    server = serve(hello, idle_timeout=0.3)
    wire = Wire(server.port)
    assert wire.request(get("/")).status == 200
    started = time.monotonic()
    assert wire.closed_by_server()  # quietly: no 408 on an idle connection
    assert 0.2 <= time.monotonic() - started < 3


def test_stalled_request_head_gets_408_after_header_timeout(serve):
    server = serve(hello, header_timeout=0.3)
    wire = Wire(server.port)
    wire.send(b"GET / HTTP/1.1\r\nHost: t\r\n")  # the headers never end
    reply = wire.read_response()
    assert (reply.status, reply.header("connection")) == (408, "close")
    assert wire.closed_by_server()
    assert_served(server)


def test_shutdown_is_prompt_with_idle_keep_alive_connections():
    server = WSGIServer(hello, "127.0.0.1", 0)  # default idle_timeout: 75 s
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    wires = [Wire(server.port) for _ in range(3)]
    for wire in wires:
        assert wire.request(get("/")).status == 200
    started = time.monotonic()
    server.shutdown(WAIT)
    assert time.monotonic() - started < 1.0
    thread.join(WAIT)
    assert not thread.is_alive()
    for wire in wires:
        assert wire.closed_by_server()
    with pytest.raises(OSError):
        Wire(server.port, timeout=1).request(get("/"))
    started = time.monotonic()
    server.shutdown(WAIT)  # a second call is harmless
    assert time.monotonic() - started < 0.1


def test_shutdown_of_a_server_that_never_served_is_immediate():
    server = WSGIServer(hello, "127.0.0.1", 0)
    started = time.monotonic()
    server.shutdown(WAIT)
    assert time.monotonic() - started < 0.5
    with pytest.raises(OSError):
        Wire(server.port, timeout=1).request(get("/"))


def test_a_parser_this_process_lacks_is_refused_by_name():
    with pytest.raises(ValueError, match="no parser 'llhttp2'.*h11"):
        WSGIServer(hello, "127.0.0.1", 0, parser="llhttp2")


def test_the_test_extra_brings_both_parsers():
    """The test extra installs httptools, so both parsers run every test here."""
    assert list(PARSERS) == ["httptools", "h11"]


# --- environ and headers ------------------------------------------------------------------------------
def test_environ_contents(serve):
    seen: list[dict[str, Any]] = []

    def app(environ, start_response):
        seen.append(dict(environ, body=environ["wsgi.input"].read()))
        return hello(environ, start_response)

    server = serve(app)
    wire = Wire(server.port)
    wire.request(b"POST /a%20b/%E2%9C%93%2F?x=1&y=%20 HTTP/1.1\r\nHost: example\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 2\r\n"
                 b"X-Rep: a\r\nx-rep: b\r\nMcp-Method: tools/list\r\n\r\n{}")
    wire.request(b"GET http://example.com/p/q?z=1 HTTP/1.1\r\nHost: elsewhere\r\n\r\n")
    wire.request(b"GET HTTPS://Example.com:8443 HTTP/1.1\r\nHost: example.com\r\n\r\n")
    wire.close()

    env = seen[0]
    assert env["REQUEST_METHOD"] == "POST"
    assert env["PATH_INFO"] == "/a b/\u2713/".encode().decode("latin-1")  # PEP 3333: bytes as latin-1
    assert env["QUERY_STRING"] == "x=1&y=%20"
    assert env["SCRIPT_NAME"] == ""
    assert env["CONTENT_TYPE"] == "application/json" and env["CONTENT_LENGTH"] == "2"
    assert "HTTP_CONTENT_TYPE" not in env and "HTTP_CONTENT_LENGTH" not in env
    assert env["HTTP_X_REP"] == "a,b"
    assert env["HTTP_MCP_METHOD"] == "tools/list"
    assert env["HTTP_HOST"] == "example"
    assert env["SERVER_PROTOCOL"] == "HTTP/1.1"
    assert env["SERVER_PORT"] == str(server.port)
    assert env["REMOTE_ADDR"] == "127.0.0.1" and env["REMOTE_PORT"].isdigit()
    assert env["wsgi.input_terminated"] is True
    assert env["wsgi.url_scheme"] == "http" and env["wsgi.version"] == (1, 0)
    assert env["wsgi.multithread"] is True and env["wsgi.multiprocess"] is False
    assert env["body"] == b"{}"
    assert (seen[1]["PATH_INFO"], seen[1]["QUERY_STRING"]) == ("/p/q", "z=1")
    assert seen[1]["HTTP_HOST"] == "example.com"  # RFC 9112 §3.2.2: the absolute-form target names the host
    assert (seen[2]["PATH_INFO"], seen[2]["QUERY_STRING"], seen[2]["HTTP_HOST"]) == ("/", "", "Example.com:8443")
    assert "CONTENT_LENGTH" not in seen[1]


def test_date_header_on_answers_and_errors(serve):
    server = serve(hello)
    wire = Wire(server.port)
    for reply in (wire.request(get("/")), wire.request(b"GET / HTTP/9.9\r\n\r\n")):
        date = reply.header("date")
        assert date is not None and date.endswith("GMT")
        assert abs(parsedate_to_datetime(date).timestamp() - time.time()) < 60
    wire.close()


def test_leading_empty_lines_before_a_request_are_ignored(serve):
    server = serve(hello)
    wire = Wire(server.port)
    reply = wire.request(b"\r\n\r\n" + get("/x"))
    assert (reply.status, reply.body) == (200, b"hello /x")
    wire.close()


# --- mcp.run --------------------------------------------------------------------------------------------
def test_mcp_run_serves_on_this_server_and_stops_cleanly_on_ctrl_c():
    """``mcp.run(transport="streamable-http", port=0)`` in a real process: it binds a port of the
    system's choosing and announces it, one connection carries several MCP requests, and Ctrl-C ends
    the process with status 0 and frees the port."""
    program = ("from minimcp.server import MCPServer\n"
               "mcp = MCPServer('run-test')\n"
               "@mcp.tool()\n"
               "def echo(text: str) -> str:\n"
               "    return text\n"
               "mcp.run(transport='streamable-http', port=0)\n")
    with server_process([sys.executable, "-c", program]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
        for text in ("one", "two", "three"):
            body = json.dumps({"jsonrpc": "2.0", "id": text, "method": "tools/call", "params": {
                "name": "echo", "arguments": {"text": text}, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}}}})
            conn.request("POST", "/mcp", body, {
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
            reply = conn.getresponse()
            assert reply.status == 200
            assert json.loads(reply.read())["result"]["structuredContent"] == {"result": text}
            assert reply.getheader("Connection") is None  # kept alive for the next request
        conn.close()
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(WAIT) == 0
        assert not _accepts_connections(server.port)


def _accepts_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_malformed_chunked_body_to_the_mcp_endpoint_is_a_400(serve):
    from minimcp.server import MCPServer

    mcp = MCPServer("chunks", log_level="WARNING")
    app = mcp.wsgi_app()
    try:
        server = serve(app)
        wire = Wire(server.port)
        reply = wire.request(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"zz\r\n{}\r\n0\r\n\r\n")
        assert reply.status == 400
        assert wire.closed_by_server()
        assert Wire(server.port).request(get("/elsewhere")).status == 404  # still serving
    finally:
        app.close()
