"""The client never drops an answer: a refused POST of an answer or a notification is sent again.

A real minimcp server behind a real proxy (a WSGI middleware on minimcp's HTTP server, on a
loopback port) that refuses the first POSTs carrying what the test names. An answer to a legacy
elicitation refused with 503 or 429 goes again after ``Retry-After`` (seconds or an HTTP date, a
short backoff when there is none) and the call completes; a refusal that cannot be retried fails
the call at once with the server's reason; a wait that would pass the call's timeout fails it by
that timeout, never later. A refused ``notifications/cancelled`` goes again without holding the call.
"""

from __future__ import annotations

import email.utils
import io
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from typing import Any

import pytest
from conftest import wait_for
from pydantic import BaseModel

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.jsonrpc import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult


class Ok(BaseModel):
    ok: bool


def _is_answer(message: Any) -> bool:
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)


def _is_cancel(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "notifications/cancelled"


class Refusing:
    """A proxy before ``app``: the first ``count`` POSTs whose message ``carries`` says are refused
    with ``status``, ``headers`` (a value may be made when the refusal is: a callable) and ``body``;
    the others pass. ``refused`` counts the refusals and ``passed`` keeps when each other went through."""

    def __init__(self, app: Any, carries: Callable[[Any], bool], count: int, status: int,
                 headers: dict[str, str | Callable[[], str]] | None = None, body: bytes = b"") -> None:
        self.app, self.carries, self.count = app, carries, count
        self.status, self.headers, self.body = status, headers or {}, body
        # _lock guards refused and passed (requests arrive on the HTTP server's threads).
        self._lock = threading.Lock()
        self.refused = 0
        self.passed: list[float] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] == "POST":
            raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(raw)
            message = json.loads(raw) if raw else None
            if self.carries(message):
                with self._lock:
                    refuse = self.refused < self.count
                    if refuse:
                        self.refused += 1
                    else:
                        self.passed.append(time.monotonic())
                if refuse:
                    kind = "application/json" if self.body.startswith(b"{") else "text/plain"
                    start_response(f"{self.status} {HTTPStatus(self.status).phrase}",
                                   [("Content-Type", kind), ("Content-Length", str(len(self.body))),
                                    *((name, value() if callable(value) else value)
                                      for name, value in self.headers.items())])
                    return [self.body]
        return self.app(environ, start_response)


#: The calls of ``wait_for_cancel`` that saw their cancel.
CANCELLED: list[str] = []


def _server() -> MCPServer:
    mcp = MCPServer("Answers")

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"

    @mcp.tool()
    def wait_for_cancel(tag: str, ctx: Context) -> str:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not ctx.cancelled:
            time.sleep(0.02)
        if ctx.cancelled:
            CANCELLED.append(tag)
        return "done"

    return mcp


@pytest.fixture
def behind(serve_wsgi: Callable[[Any], str]) -> Iterator[Callable[..., tuple[str, Refusing]]]:
    """Serve the test server behind a ``Refusing`` proxy made with the given options; returns the
    endpoint's URL and the proxy."""
    apps: list[Any] = []

    def start(carries: Callable[[Any], bool], count: int, status: int, **options: Any) -> tuple[str, Refusing]:
        app = _server().wsgi_app(keepalive_interval=0.5)  # a stream whose client left ends at the next tick
        apps.append(app)
        proxy = Refusing(app, carries, count, status, **options)
        return serve_wsgi(proxy) + app.path, proxy

    yield start
    for app in apps:
        app.close()


def _agree(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


def _confirm(url: str, timeout: float = 20.0) -> tuple[str, float]:
    """Call ``confirm`` on a legacy session, agreeing; its text and how long it took."""
    with Client(streamable_http_client(url), mode="legacy", elicitation_callback=_agree) as client:
        began = time.monotonic()
        result = client.call_tool("confirm", {"door": "front"}, read_timeout_seconds=timeout)
        return result.content[0].text, time.monotonic() - began


def _failed_confirm(url: str, timeout: float = 20.0) -> tuple[str, float]:
    """Call ``confirm`` expecting it to fail: the error's message and how long the call took."""
    with Client(streamable_http_client(url), mode="legacy", elicitation_callback=_agree) as client:
        began = time.monotonic()
        with pytest.raises(MCPError) as failed:
            client.call_tool("confirm", {"door": "front"}, read_timeout_seconds=timeout)
        return failed.value.message, time.monotonic() - began


def _http_date(seconds_ahead: float) -> str:
    return email.utils.formatdate(time.time() + seconds_ahead, usegmt=True)


@pytest.mark.parametrize("status, headers, least", [
    (503, {"Retry-After": "1"}, 2.0),  # waited as asked, twice
    (429, {}, 1.0),  # no Retry-After: a short backoff (0.5 s, then 1 s)
    (503, {"Retry-After": lambda: _http_date(1.5)}, 1.0),  # an HTTP date, 0.5 to 1.5 s ahead (whole seconds)
], ids=["503-seconds", "429-backoff", "503-http-date"])
def test_an_answer_refused_for_now_is_sent_again_and_the_call_completes(
        behind: Callable[..., tuple[str, Refusing]], status: int, headers: dict[str, Any], least: float) -> None:
    url, proxy = behind(_is_answer, 2, status, headers=headers)
    text, took = _confirm(url)
    assert text == "front: accept True"
    assert proxy.refused == 2 and len(proxy.passed) == 1
    assert least * 0.9 <= took < least + 5


def test_an_answer_refused_for_good_fails_the_call_at_once_with_the_servers_reason(
        behind: Callable[..., tuple[str, Refusing]]) -> None:
    url, proxy = behind(_is_answer, 1, 403, body=b"Forbidden by the proxy's policy\n")
    message, took = _failed_confirm(url)
    assert "The server refused our answer to its question (HTTP 403: Forbidden by the proxy's policy)" in message
    assert took < 5 and proxy.refused == 1 and proxy.passed == []


@pytest.mark.parametrize("retry_after, timeout", [("30", 3.0), ("1", 2.5)], ids=["wait-past-timeout", "until-timeout"])
def test_an_answer_refused_until_the_calls_timeout_fails_it_by_that_timeout(
        behind: Callable[..., tuple[str, Refusing]], retry_after: str, timeout: float) -> None:
    draining = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "Draining"}}).encode()
    url, proxy = behind(_is_answer, 100, 503, headers={"Retry-After": retry_after}, body=draining)
    message, took = _failed_confirm(url, timeout)
    assert "(HTTP 503: Draining)" in message and "the call's deadline" in message
    assert took < timeout + 0.5
    assert proxy.passed == []


def test_a_refused_cancel_is_sent_again_without_holding_the_call(behind: Callable[..., tuple[str, Refusing]]) -> None:
    url, proxy = behind(_is_cancel, 1, 503, headers={"Retry-After": "1"})
    with Client(streamable_http_client(url), mode="legacy") as client:
        began = time.monotonic()
        with pytest.raises(MCPError) as failed:
            client.call_tool("wait_for_cancel", {"tag": "refused-once"}, read_timeout_seconds=1.0)
        took = time.monotonic() - began
        assert "timed out" in failed.value.message and took < 1.9
        assert wait_for(lambda: "refused-once" in CANCELLED, 10.0)
    assert proxy.refused == 1 and len(proxy.passed) == 1 and proxy.passed[0] - began >= 1.9
