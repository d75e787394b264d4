"""The client's own HTTP path: kept connections, one resend rule, and ``requests`` where the
environment asks for it.

A counting TCP relay sits between the client and a real minimcp server, so the tests see how many
connections the client opened, which is what each call's cost depends on.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from raw_http_support import CountingListener, pump

from minimcp import Client, MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

CALLS = 10


class Relay(CountingListener):
    """Forwards every connection it accepts to ``target`` and counts them."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        super().__init__()

    def handle(self, conn: socket.socket, number: int) -> None:
        outbound = socket.create_connection(self.target, timeout=30)
        for pair in ((conn, outbound), (outbound, conn)):
            threading.Thread(target=pump, args=pair, daemon=True).start()


def _server() -> MCPServer:
    mcp = MCPServer("relayed")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def counted(text: str, ctx: Context) -> str:
        """Reports progress, so (asked with a progress token) the answer comes on an SSE stream."""
        ctx.report_progress(1, 2)
        return text

    return mcp


@pytest.fixture
def relayed(serve_http: Callable[..., str]) -> Iterator[tuple[str, Relay]]:
    url = serve_http(_server())
    host_port = url.split("/")[2]
    relay = Relay(("127.0.0.1", int(host_port.split(":")[1])))
    try:
        yield url.replace(host_port, f"127.0.0.1:{relay.port}"), relay
    finally:
        relay.close()


@pytest.mark.parametrize("tool", ["echo", "counted"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_sequential_calls_share_one_connection(relayed: tuple[str, Relay], mode: str, tool: str) -> None:
    """Every answer is read to its end, an SSE stream's too (the server ends it right after the
    answer), so the next call reuses the connection; a legacy client's standalone stream holds one
    more."""
    url, relay = relayed
    progress: list[float] = []
    with Client(url, mode=mode) as client:
        for i in range(CALLS):
            result = client.call_tool(tool, {"text": f"hello {i}"},
                                      progress_callback=lambda done, total, message: progress.append(done))
            assert result.structured_content == {"result": f"hello {i}"}
    assert progress == ([1] * CALLS if tool == "counted" else [])
    assert relay.connections <= (2 if mode == "legacy" else 1)


def test_threads_sharing_a_client_get_a_connection_each(relayed: tuple[str, Relay]) -> None:
    url, relay = relayed
    answers: list[Any] = []
    with Client(url, mode="2026-07-28") as client:
        def loop(tag: int) -> None:
            for i in range(CALLS):
                answers.append(client.call_tool("echo", {"text": f"{tag}-{i}"}).structured_content["result"])

        workers = [threading.Thread(target=loop, args=(t,)) for t in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
    assert sorted(answers) == sorted(f"{t}-{i}" for t in range(4) for i in range(CALLS))
    assert relay.connections <= 4


class RecordingProxy:
    """An HTTP proxy that writes down the request line it was sent and refuses with 502."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.request_lines: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    head += chunk
                self.request_lines.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(10)


def test_a_proxy_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the environment names a proxy, the client sends through ``requests``, which reads it."""
    proxy = RecordingProxy()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.listener.getsockname()[1]}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with pytest.raises(MCPError):
            with Client("http://mcp.example.invalid/mcp", mode="2026-07-28") as client:
                client.call_tool("echo", {"text": "x"})
    finally:
        proxy.close()
    assert proxy.request_lines == ["POST http://mcp.example.invalid/mcp HTTP/1.1"]


def test_a_server_that_is_gone_is_a_network_error(unused_tcp_port: int) -> None:
    with pytest.raises(MCPError, match="Connection closed"):
        with Client(f"http://127.0.0.1:{unused_tcp_port}/mcp", mode="2026-07-28") as client:
            client.call_tool("echo", {"text": "x"})


@pytest.fixture
def unused_tcp_port() -> Iterator[int]:
    """A port with nothing listening: bound, never listened on, so a connect is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


class Recorder:
    """WSGI middleware in front of the MCP app: notes each request's ``X-Team`` and ``Cookie``
    headers, sets a site cookie on the first answer, and refuses ``initialize`` once told to."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str | None, str | None]] = []
        self.hosts: list[str | None] = []
        self.refuse_initialize = False

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.seen.append((environ.get("HTTP_X_TEAM"), environ.get("HTTP_COOKIE")))
        self.hosts.append(environ.get("HTTP_HOST"))
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        if self.refuse_initialize and b'"initialize"' in body:
            start_response("503 Service Unavailable", [("Content-Length", "0")])
            return [b""]
        import io

        environ["wsgi.input"] = io.BytesIO(body)
        first = len(self.seen) == 1

        def starting(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            if first:
                headers = [*headers, ("Set-Cookie", "site=signed-in; Path=/")]
            return start_response(status, headers, *rest)

        return self.app(environ, starting)


@pytest.fixture
def recorded(serve_wsgi: Callable[[Any], str]) -> Iterator[tuple[str, Recorder]]:
    app = _server().wsgi_app()
    recorder = Recorder(app)
    try:
        yield serve_wsgi(recorder) + app.path, recorder
    finally:
        app.close()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_headers_go_with_every_request(recorded: tuple[str, Recorder], mode: str) -> None:
    url, recorder = recorded
    with Client(url, mode=mode, headers={"X-Team": "blue"}) as client:
        assert client.call_tool("echo", {"text": "hi"}).structured_content == {"result": "hi"}
    assert recorder.seen and all(team == "blue" for team, _ in recorder.seen)


def test_every_request_names_the_host_it_is_for(recorded: tuple[str, Recorder]) -> None:
    """The client writes its requests' heads itself; each carries ``Host`` as HTTP/1.1 requires."""
    url, recorder = recorded
    with Client(url, mode="legacy") as client:
        client.call_tool("echo", {"text": "hi"})
    assert recorder.hosts and set(recorder.hosts) == {url.split("/")[2]}


@pytest.mark.parametrize("value", ["blue\r\nX-Injected: 1", "blue\nX-Injected: 1"])
def test_a_header_value_with_a_line_break_is_refused_before_sending(recorded: tuple[str, Recorder],
                                                                    value: str) -> None:
    """A value that would end its header line early (and smuggle another header in) never goes out."""
    url, recorder = recorded
    with pytest.raises(ValueError, match="may not contain CR or LF"):
        with Client(url, mode="2026-07-28", headers={"X-Team": value}) as client:
            client.call_tool("echo", {"text": "hi"})
    assert recorder.seen == []


def test_cookies_are_sent_and_kept(recorded: tuple[str, Recorder]) -> None:
    """A site's session login: the cookie given is sent, and one the server sets is kept."""
    url, recorder = recorded
    with Client(url, mode="legacy", cookies={"csrftoken": "abc"}) as client:
        client.call_tool("echo", {"text": "hi"})
    first, *later = [cookie for _, cookie in recorder.seen]
    assert first == "csrftoken=abc"
    assert later and all(cookie is not None and "site=signed-in" in cookie and "csrftoken=abc" in cookie
                         for cookie in later)


def test_a_lost_session_fails_every_later_call_with_session_expired(recorded: tuple[str, Recorder]) -> None:
    """The server forgot the session and will not open a new one: each later call says so at once,
    rather than going out without a session id."""
    import requests

    from minimcp.client.transports import SessionExpired

    url, recorder = recorded
    with Client(url, mode="legacy") as client:
        transport = client.session.transport
        requests.delete(url, headers={"Mcp-Session-Id": transport.session_id, "MCP-Protocol-Version": "2025-11-25"},
                        timeout=10)
        recorder.refuse_initialize = True
        with pytest.raises(MCPError):
            client.call_tool("echo", {"text": "one"})
        sent = len(recorder.seen)
        for text in ("two", "three"):
            with pytest.raises(SessionExpired, match="Session not found"):
                client.call_tool("echo", {"text": text})
        assert len(recorder.seen) == sent


def test_headers_need_a_url() -> None:
    with pytest.raises(TypeError, match="headers= goes with HTTP requests"):
        Client(_server(), headers={"X-Team": "blue"})
