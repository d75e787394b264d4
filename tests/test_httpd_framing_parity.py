"""minimcp's HTTP server reads every framing probe as gunicorn does (issue 25).

A request that two servers frame differently is the desync that smuggles a second request past a
front end. Each probe is one request, with a second one pipelined after it on the same connection;
it goes to a real gunicorn process (``gthread`` workers) and to minimcp's ``WSGIServer``, both
serving the same app (``tests/servers/framing_app.py``), each on a port it bound itself. The
verdict compared is the status of the first answer and whether the pipelined request was served;
gunicorn's verdict is measured in the same run, never written down here.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import ROOT, server_process

from minimcp.httpd import WSGIServer
from minimcp.httpd.parsing import PARSERS

sys.path.insert(0, str(ROOT / "tests" / "servers"))
from framing_app import app  # noqa: E402

WAIT = 20.0  # a bound for a loaded machine; a server answers each probe in milliseconds
SECOND = b"GET /second HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
POST = b"POST /first HTTP/1.1\r\nHost: t\r\n"
CHUNKED = POST + b"Transfer-Encoding: chunked\r\n\r\n"
UNREAD = b"POST /unread HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"

PROBES = {
    # Served by both: the verdict tells a served pipelined request apart.
    "plain GET": b"GET /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "Content-Length body": POST + b"Content-Length: 5\r\n\r\nhello",
    "chunked body": CHUNKED + b"5\r\nhello\r\n0\r\n\r\n",
    "chunk extensions and a trailer": CHUNKED + b"5;a=b;c=\"d e\";f\r\nhello\r\n0\r\nX-T: a\r\n\r\n",
    "chunked body left unread": UNREAD + b"5\r\nhello\r\n0\r\n\r\n",
    "one empty line before the request line": b"\r\nGET /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "obs-text in a header value": b"GET /first HTTP/1.1\r\nHost: t\r\nX-A: caf\xe9\r\n\r\n",
    # The probes of issue 25.
    "two identical Content-Length fields": POST + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
    "content-length beside Content-Length": POST + b"Content-Length: 5\r\ncontent-length: 5\r\n\r\nhello",
    "Content-Length list 5, 5": POST + b"Content-Length: 5, 5\r\n\r\nhello",
    "Content-Length list 5,5": POST + b"Content-Length: 5,5\r\n\r\nhello",
    "whitespace after a chunk size": CHUNKED + b"5 \r\nhello\r\n0\r\n\r\n",
    "tab after a chunk size": CHUNKED + b"5\t\r\nhello\r\n0\r\n\r\n",
    "whitespace after the last chunk size": CHUNKED + b"5\r\nhello\r\n0 \r\n\r\n",
    "whitespace after a chunk size, body unread": UNREAD + b"5 \r\nhello\r\n0\r\n\r\n",
    "trailer line without a colon": CHUNKED + b"5\r\nhello\r\n0\r\nNoColon\r\n\r\n",
    "trailer line without a colon, body unread": UNREAD + b"5\r\nhello\r\n0\r\nNoColon\r\n\r\n",
    "lower-case method": b"get /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "mixed-case method": b"Get /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "method with a #": b"G#T /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "method of two characters": b"GE /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "method of 21 characters": b"ABCDEFGHIJKLMNOPQRSTU /first HTTP/1.1\r\nHost: t\r\n\r\n",
    # Further framing and ambiguity that gunicorn refuses.
    "Content-Length in the trailers": CHUNKED + b"5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n",
    "Transfer-Encoding in the trailers": CHUNKED + b"5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
    "chunk extension with a space in its name": CHUNKED + b"5;a b\r\nhello\r\n0\r\n\r\n",
    "unterminated quoted chunk extension": CHUNKED + b"5;a=\"b\r\nhello\r\n0\r\n\r\n",
    "whitespace after a chunk extension": CHUNKED + b"5;a=b \r\nhello\r\n0\r\n\r\n",
    "DEL in a header value": b"GET /first HTTP/1.1\r\nHost: t\r\nX-A: a\x7fb\r\n\r\n",
    "two Content-Type fields": POST + b"Content-Type: a/b\r\nContent-Type: c/d\r\nContent-Length: 0\r\n\r\n",
    "an expectation other than 100-continue": b"GET /first HTTP/1.1\r\nHost: t\r\nExpect: teapot\r\n\r\n",
    # Strictness minimcp had before, checked against gunicorn's all the same.
    "Transfer-Encoding gzip": POST + b"Transfer-Encoding: gzip\r\n\r\nhello",
    "Transfer-Encoding identity": POST + b"Transfer-Encoding: identity\r\n\r\nhello",
    "Transfer-Encoding chunked, gzip": POST + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
    "two Transfer-Encoding fields": POST + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
                                    b"0\r\n\r\n",
    "Content-Length and chunked": POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "conflicting Content-Length fields": POST + b"Content-Length: 1\r\nContent-Length: 5\r\n\r\nhello",
    "Content-Length with a sign": POST + b"Content-Length: +5\r\n\r\nhello",
    "bare LF ending a header line": b"GET /first HTTP/1.1\r\nHost: t\r\nX-A: a\nX-B: b\r\n\r\n",
    "NUL in a header value": b"GET /first HTTP/1.1\r\nHost: t\r\nX-A: a\x00b\r\n\r\n",
    "obsolete line folding": b"GET /first HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n  continued\r\n\r\n",
    "space before a colon": b"GET /first HTTP/1.1\r\nHost : t\r\n\r\n",
    "two Host fields": b"GET /first HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "method with a non-token character": b"G@T /first HTTP/1.1\r\nHost: t\r\n\r\n",
    "asterisk target with GET": b"GET * HTTP/1.1\r\nHost: t\r\n\r\n",
    "malformed chunk size": CHUNKED + b"zz\r\nhello\r\n0\r\n\r\n",
    "chunk data not followed by CRLF": CHUNKED + b"5\r\nhelloXX0\r\n\r\n",
    "bare LF after a chunk size": CHUNKED + b"5\nhello\r\n0\r\n\r\n",
    "whitespace before a chunk size": CHUNKED + b" 5\r\nhello\r\n0\r\n\r\n",
}


def verdict(port: int, probe: bytes) -> tuple[str, bool]:
    """(the first answer's status, whether the pipelined ``GET /second`` was served)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        try:
            sock.sendall(probe + SECOND)
        except OSError:
            pass  # refused before all of it was read
        received = b""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:  # the server closes: after an error, or the second request
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not data:
                break
            received += data
    status = received[9:12].decode("latin-1") if received[:7] == b"HTTP/1." else f"no answer: {received[:40]!r}"
    return status, b"served GET /second" in received


@pytest.fixture(scope="module")
def gunicorn_port() -> Iterator[int]:
    command = [sys.executable, "-m", "gunicorn", "--no-control-socket", "--worker-class", "gthread", "--threads", "4",
               "--workers", "1", "--bind", "127.0.0.1:0", "--chdir", str(ROOT / "tests" / "servers"),
               "framing_app:app"]
    with server_process(command) as gunicorn:
        yield gunicorn.port


@pytest.fixture(scope="module", params=list(PARSERS))
def ports(request: pytest.FixtureRequest, gunicorn_port: int) -> Iterator[tuple[int, int]]:
    """(gunicorn's port, minimcp's port), each server serving ``framing_app.app``; minimcp's once
    per request parser, so that both parsers are held to gunicorn's verdicts."""
    server = WSGIServer(app, "127.0.0.1", 0, parser=request.param)
    thread = threading.Thread(target=server.serve_forever, name="test-httpd", daemon=True)
    thread.start()
    try:
        yield gunicorn_port, server.port
    finally:
        server.shutdown(WAIT)
        thread.join(WAIT)


@pytest.mark.parametrize("probe", PROBES.values(), ids=PROBES.keys())
def test_minimcp_frames_each_probe_as_gunicorn_does(ports, probe):
    gunicorn_port, minimcp_port = ports
    assert verdict(minimcp_port, probe) == verdict(gunicorn_port, probe)


def test_the_probes_tell_served_from_refused(ports):
    """The comparison means something only if the probes draw both verdicts from gunicorn."""
    verdicts = {verdict(ports[0], probe) for probe in PROBES.values()}
    assert ("200", True) in verdicts and ("400", False) in verdicts, verdicts
