"""``examples/payment_page.py``: URL-mode elicitation finished by a real page in a real browser.

The server runs on a loopback port. Two kinds of client drive it: a wire-level legacy session
(plain ``requests``, so the server's behaviour is checked independently of ``minimcp.client``),
and the real ``Client`` with the terminal callback, whose "browser" is headless Chromium opening
the page with ``?autosubmit=1``.
"""

from __future__ import annotations

import importlib.util
import io
import json
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
from browser_support import CHROMIUM, CHROMIUM_FLAGS
from conftest import BASE_HEADERS, TIMEOUT, LegacySession, chromium_program, legacy_handshake, request_message

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "payment_page.py"
URL_CAPABLE = {"elicitation": {"form": {}, "url": {}}}


@pytest.fixture
def example() -> ModuleType:
    """A fresh copy of the example per test: its registry of waiting sessions is module state."""
    spec = importlib.util.spec_from_file_location("payment_page_under_test", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def mcp_url(example: ModuleType, serve_http: Callable[..., str]) -> str:
    """A short keepalive: a DELETEd session's GET stream only notices at its next keepalive tick."""
    return serve_http(example.mcp, keepalive_interval=0.2)


def base_of(mcp_url: str) -> str:
    return mcp_url.rsplit("/mcp", 1)[0]


def run_chromium(url: str, tmp_path: Path) -> str:
    """Open ``url`` in headless Chromium, let the page's scripts run, return the final DOM."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}",
         "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# --- a wire-level legacy client -------------------------------------------------------------------
class WireClient:
    """A legacy session with its standalone GET stream, answering questions with ``answer``."""

    def __init__(self, url: str) -> None:
        self.session: LegacySession = legacy_handshake(url, capabilities=URL_CAPABLE)
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.questions: list[dict[str, Any]] = []
        self._stream = requests.get(url, stream=True, timeout=(5, TIMEOUT), headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": self.session.session_id,
            "MCP-Protocol-Version": self.session.protocol_version})
        assert self._stream.status_code == 200, self._stream.text
        self._reader = threading.Thread(target=self._read_standalone, daemon=True)
        self._reader.start()

    def _read_standalone(self) -> None:
        try:
            for message in _sse_messages(self._stream):
                if "method" in message and "id" not in message:
                    self.notifications.put(message)
        except requests.RequestException:  # a test that failed early may leave the stream broken
            pass

    def call_tool(self, name: str, arguments: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        """``tools/call`` on an SSE response; each server question gets ``answer`` POSTed back."""
        message = request_message("tools/call", {"name": name, "arguments": arguments})
        headers = {**BASE_HEADERS, "Mcp-Session-Id": self.session.session_id,
                   "MCP-Protocol-Version": self.session.protocol_version}
        with requests.post(self.session.url, json=message, headers=headers, stream=True,
                           timeout=(5, TIMEOUT)) as response:
            for incoming in _sse_messages(response) if response.headers["Content-Type"].startswith(
                    "text/event-stream") else [response.json()]:
                if incoming.get("method") == "elicitation/create":
                    self.questions.append(incoming["params"])
                    ack = self.session.post({"jsonrpc": "2.0", "id": incoming["id"], "result": answer})
                    assert ack.status_code == 202, ack.text
                elif incoming.get("id") == message["id"]:
                    assert "result" in incoming, incoming
                    return incoming["result"]
        raise AssertionError("the call's stream ended without a result")

    def close(self) -> None:
        """DELETE first: the server then ends the GET stream, so the reader finishes on its own."""
        self.session.delete()
        self._reader.join(TIMEOUT)
        self._stream.close()


def _sse_messages(response: requests.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines(decode_unicode=True):
        if line and line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:].strip())


@pytest.fixture
def wire(mcp_url: str) -> Iterator[Callable[[], WireClient]]:
    clients: list[WireClient] = []

    def connect() -> WireClient:
        clients.append(WireClient(mcp_url))
        return clients[-1]

    yield connect
    for client in clients:
        client.close()


def submit_with_requests(page: str, tmp_path: Path) -> str:
    response = requests.post(page, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.text


def submit_with_chromium(page: str, tmp_path: Path) -> str:
    chromium_program()
    return run_chromium(page + "&autosubmit=1", tmp_path)


# --- the page on its own -----------------------------------------------------------------------------
def test_page_shows_an_escaped_form(mcp_url: str) -> None:
    page = requests.get(base_of(mcp_url) + "/pay", params={"booking": "<b>42</b>"}, timeout=TIMEOUT)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "Deposit for booking &lt;b&gt;42&lt;/b&gt;" in page.text
    assert '<form method="post" action="/pay?booking=%3Cb%3E42%3C%2Fb%3E">' in page.text
    assert "onload" not in page.text
    auto = requests.get(base_of(mcp_url) + "/pay?booking=42&autosubmit=1", timeout=TIMEOUT)
    assert '<body onload="document.forms[0].submit()">' in auto.text


def test_page_needs_a_booking_and_a_waiting_deposit(mcp_url: str) -> None:
    assert requests.get(base_of(mcp_url) + "/pay", timeout=TIMEOUT).status_code == 400
    nothing = requests.post(base_of(mcp_url) + "/pay?booking=42", timeout=TIMEOUT)
    assert nothing.status_code == 404
    assert "No deposit is waiting for booking 42." in nothing.text
    assert requests.put(base_of(mcp_url) + "/pay?booking=42", timeout=TIMEOUT).status_code == 405


# --- the flow at the wire level ---------------------------------------------------------------------
@pytest.mark.parametrize("submit", [submit_with_requests, submit_with_chromium], ids=["requests", "chromium"])
def test_paying_notifies_exactly_the_session_that_asked(
        mcp_url: str, wire: Callable[[], WireClient], submit: Callable[[str, Path], str], tmp_path: Path) -> None:
    payer, bystander = wire(), wire()
    result = payer.call_tool("pay_deposit", {"booking_id": "42"}, {"action": "accept"})
    assert result["content"][0]["text"] == "Complete the payment in your browser."
    page = base_of(mcp_url) + "/pay?booking=42"
    assert payer.questions == [{"mode": "url", "message": "A 20 EUR deposit confirms your booking.",
                                "url": page, "elicitationId": "deposit-42"}]

    assert "Payment received for booking 42." in submit(page, tmp_path)

    note = payer.notifications.get(timeout=TIMEOUT)
    assert note == {"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": "deposit-42"}}
    assert bystander.notifications.empty()
    again = requests.post(page, timeout=TIMEOUT)
    assert again.status_code == 404  # paid once; the id is forgotten


def test_declining_forgets_the_deposit(mcp_url: str, wire: Callable[[], WireClient]) -> None:
    client = wire()
    result = client.call_tool("pay_deposit", {"booking_id": "7"}, {"action": "decline"})
    assert result["content"][0]["text"] == "No deposit taken. The booking expires in one hour."
    assert requests.post(base_of(mcp_url) + "/pay?booking=7", timeout=TIMEOUT).status_code == 404


# --- the real client, the terminal callback and a headless browser -----------------------------------
def test_client_sees_payment_completed_from_headless_chromium(
        example: ModuleType, mcp_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The user types "y"; the callback opens the "browser"; the page's POST reaches the client."""
    chromium_program()
    from minimcp.client.terminal import TerminalElicitation

    browsers: list[subprocess.Popen[str]] = []

    def open_in_headless_chromium(url: str, *args: Any, **kwargs: Any) -> bool:
        browsers.append(subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
             "--dump-dom", url + "&autosubmit=1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        return True

    monkeypatch.setattr("webbrowser.open", open_in_headless_chromium)
    screen = io.StringIO()
    callback = TerminalElicitation(input=io.StringIO("y\n"), output=screen, open_browser=True)
    try:
        assert example.pay(mcp_url, "42", callback, timeout=60) is True
    finally:
        dom = [b.communicate(timeout=120)[0] for b in browsers]
    assert capsys.readouterr().out.splitlines() == ["Complete the payment in your browser.", "payment completed"]
    assert f"  {base_of(mcp_url)}/pay?booking=42\n" in screen.getvalue()
    assert len(dom) == 1 and "Payment received for booking 42." in dom[0]


def test_example_client_reports_a_decline(example: ModuleType, mcp_url: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from minimcp.client.terminal import TerminalElicitation

    callback = TerminalElicitation(input=io.StringIO("n\n"), output=io.StringIO())
    assert example.pay(mcp_url, "42", callback, timeout=5) is False
    assert capsys.readouterr().out == "No deposit taken. The booking expires in one hour.\n"

