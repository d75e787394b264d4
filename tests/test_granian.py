"""granian's WSGI interface, the production server the deployment guide (docs/how-to/deploy.md)
recommends, serving a minimcp app: the guide's command as printed (only the address and the app
swapped in), both eras and an elicitation round trip through ``Client``; and two granian workers sharing a real
redis-server, a legacy session's requests landing on either process.

granian cannot announce a port it was asked to pick (``--port 0`` makes each worker bind a port
of its own, and the banner says ``:0``), so the test has the system pick one and holds it bound,
not listening, with ``SO_REUSEPORT`` for the whole test: no other program can take it, and
granian's workers, which bind with ``SO_REUSEPORT`` too, listen on it; granian's banner then
announces it.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_support import SERVERS, accept, client_of, pids_answering, server_env
from conftest import MODES, RedisServer, ServerProcess, docs_source, server_process, wait_for

from minimcp import Client
from minimcp.client import ClientRequestContext
from minimcp.types import ElicitResult

STARTUP = 30.0
#: Calls on new connections in the two-worker test: SO_REUSEPORT spreads them by a hash of the
#: client's port, so all of them on one worker has a chance of one in 2**23.
SPREAD_CALLS = 24


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@contextlib.contextmanager
def granian(app: str, folder: Path, env: dict[str, str] | None = None, workers: int | None = None) -> Iterator[ServerProcess]:
    """The deployment guide's command serving ``app`` from ``folder`` on a port held for it
    (``workers`` in place of the guide's count when given)."""
    printed = docs_source("how_to/granian.sh").split()
    assert printed[:3] == ["granian", "--interface", "wsgi"] and printed[-1] == "server:app", printed
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        command = [sys.executable, "-m", *printed[:-1], "--working-dir", str(folder), app]
        command[command.index("--host") + 1] = "127.0.0.1"
        command[command.index("--port") + 1] = str(port)
        if workers is not None:
            command[command.index("--workers") + 1] = str(workers)
        with server_process(command, env) as server:
            assert server.port == port, server.banner
            assert wait_for(lambda: _accepts(port), STARTUP), server.banner
            yield server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with granian("wsgi_app:app", SERVERS) as server:
        yield f"{server.base}/mcp"


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


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_two_workers_sharing_redis_answer_each_others_questions(redis_server: RedisServer, mode: str) -> None:
    """``--workers 2`` with a shared backend: each request on a new connection, so the kernel
    spreads them over both processes; once both serve, every round trip completes.

    granian starts its workers one after the other, and the port accepts as soon as the first
    listens: the round trips wait (bounded) until both processes answer."""
    with granian("shared_server:app", SERVERS, server_env(redis_server.url), workers=2) as server:
        pids: set[int] = set()

        def both_serve() -> bool:
            pids.update(pids_answering(server, SPREAD_CALLS, mode=mode))
            return len(pids) == 2

        assert wait_for(both_serve, STARTUP), f"only {pids} answered:\n{''.join(server.banner)}"
        client, _ = client_of(server, mode=mode, elicitation_callback=accept, read_timeout_seconds=60)
        with client:
            texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(6)]
            version = client.protocol_version
    assert texts == [f"d{n}: accept True" for n in range(6)]
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
