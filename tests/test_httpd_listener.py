"""``WSGIServer``'s entries for a process manager (what the gunicorn worker class uses): serving a
listening socket bound already (``listener=``), and a graceful stop (``shutdown(drain=True)``)
that lets running requests send their answers and cuts only those that overrun."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from minimcp.httpd import WSGIServer

WAIT = 10.0


class Held:
    """A WSGI app whose requests wait for ``release`` (bounded) once they have ``entered``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ["PATH_INFO"] == "/held":
            self.entered.set()
            self.release.wait(WAIT)
        body = b"done " + environ["PATH_INFO"].encode()
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]


@pytest.fixture
def held() -> Iterator[tuple[WSGIServer, Held, threading.Thread]]:
    app = Held()
    listener = socket.create_server(("127.0.0.1", 0))
    server = WSGIServer(app, listener=listener)
    loop = threading.Thread(target=server.serve_forever, name="test-httpd", daemon=True)
    loop.start()
    yield server, app, loop
    app.release.set()
    server.shutdown(WAIT)
    loop.join(WAIT)


def fetch(port: int, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def in_flight(port: int, path: str) -> tuple[threading.Thread, list[Any]]:
    """``fetch`` on a thread of its own: its outcome (an answer or an exception) lands in the list."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fetch(port, path))
        except (OSError, http.client.HTTPException) as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, name="test-client", daemon=True)
    thread.start()
    return thread, outcome


def test_a_listener_bound_already_is_served_and_its_address_reported(held: tuple[WSGIServer, Held, threading.Thread]) -> None:
    server, _, _ = held
    assert server.host == "127.0.0.1"
    assert fetch(server.port, "/one") == (200, b"done /one")


def test_drain_lets_the_running_request_answer_and_accepts_no_more(held: tuple[WSGIServer, Held, threading.Thread]) -> None:
    server, app, loop = held
    client, outcome = in_flight(server.port, "/held")
    assert app.entered.wait(WAIT)
    stopper = threading.Thread(target=server.shutdown, args=(WAIT,), kwargs={"drain": True}, daemon=True)
    stopper.start()
    loop.join(WAIT)
    assert not loop.is_alive()  # the loop is done: nothing new is accepted
    with pytest.raises(ConnectionRefusedError):
        fetch(server.port, "/late")
    app.release.set()
    client.join(WAIT)
    stopper.join(WAIT)
    assert outcome == [(200, b"done /held")]


def test_drain_cuts_a_request_still_running_at_the_timeout(held: tuple[WSGIServer, Held, threading.Thread]) -> None:
    server, app, _ = held
    client, outcome = in_flight(server.port, "/held")
    assert app.entered.wait(WAIT)
    server.shutdown(0.2, drain=True)
    client.join(WAIT)
    assert len(outcome) == 1 and isinstance(outcome[0], (OSError, http.client.HTTPException))
