"""granian's WSGI interface, the production server the README names beside the recommended one
(Deployment), serving a minimcp app: a real granian process, both eras and an elicitation round
trip through ``Client``.

granian cannot announce a port it was asked to pick (``--port 0`` makes each worker bind a port
of its own, and the banner says ``:0``), so the test has the system pick one and holds it bound,
not listening, with ``SO_REUSEPORT`` for the whole test: no other program can take it, and
granian's workers, which bind with ``SO_REUSEPORT`` too, listen on it; granian's banner then
announces it.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import MODES, ROOT, server_process, wait_for

from minimcp import Client
from minimcp.client import ClientRequestContext
from minimcp.types import ElicitResult

STARTUP = 30.0


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        command = [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
                   "--workers", "1", "--blocking-threads", "32", "--no-ws", "--working-dir",
                   str(ROOT / "tests" / "servers"), "wsgi_app:app"]
        with server_process(command) as granian:
            assert granian.port == port, granian.banner
            assert wait_for(lambda: _accepts(port), STARTUP), granian.banner
            yield f"{granian.base}/mcp"


def copies(context: ClientRequestContext, params: Any) -> ElicitResult:
    assert params.message == "How many copies of 'Dune'?"
    return ElicitResult(action="accept", content={"copies": 2})


@MODES
def test_both_eras_are_served(url: str, mode: str, version: str) -> None:
    with Client(url, mode=mode) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info.name == "wsgi-app"
        assert client.call_tool("echo", {"text": "through granian"}).content[0].text == "through granian"


@MODES
def test_an_elicitation_round_trip(url: str, mode: str, version: str) -> None:
    with Client(url, mode=mode, elicitation_callback=copies) as client:
        assert client.protocol_version == version
        result = client.call_tool("reserve", {"title": "Dune"})
    assert result.content[0].text == "Reserved 2 of 'Dune'."


def test_legacy_questions_outstanding_at_once(url: str) -> None:
    """A legacy question holds its call's thread until answered: with four asked and none answered
    until all four are out, granian's blocking threads must hold four calls and still take the
    answers."""
    everyone_asked = threading.Barrier(4, timeout=30)
    answers: list[str] = []
    lock = threading.Lock()

    def answer_when_all_asked(context: ClientRequestContext, params: Any) -> ElicitResult:
        everyone_asked.wait()
        return copies(context, params)

    def book() -> None:
        with Client(url, mode="legacy", elicitation_callback=answer_when_all_asked) as client:
            text = client.call_tool("reserve", {"title": "Dune"}).content[0].text
        with lock:
            answers.append(text)

    threads = [threading.Thread(target=book) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == ["Reserved 2 of 'Dune'."] * 4
