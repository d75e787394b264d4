"""The HTTP server keeps its threads on one CPU (``WSGIServer(pin_cpu=True)``, the default, and
``mcp.run``'s; ``minimcp.httpd.affinity``): the loop, the request threads it starts and the MCP
worker pool's threads they start all run on the CPU the loop started on, or on the
``cpu_index``-th allowed one (gunicorn's worker ``k`` on the ``k``-th), and move to a quieter one
when another process crowds theirs; ``pin_cpu=False`` leaves them where the process may run. A
machine allowing this process one CPU only has nothing to pin: every thread then stays on it,
which the assertions below expect.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_support import SERVERS, gunicorn_command, server_env, worker_command
from conftest import ServerProcess, server_process

from minimcp import Client
from minimcp.httpd import WSGIServer
from minimcp.httpd.affinity import ProcessPin

WAIT = 10.0
ALLOWED = sorted(os.sched_getaffinity(0))
PINNED = len(ALLOWED) > 1 and getattr(sys, "_is_gil_enabled", lambda: True)()


def one_cpu(index: int | None = None) -> list[list[int]]:
    """What a pinned thread may run on: the ``index``-th allowed CPU, or (``None``) any single one."""
    if not PINNED:
        return [ALLOWED]
    return [[ALLOWED[index % len(ALLOWED)]]] if index is not None else [[cpu] for cpu in ALLOWED]


def report_cpus(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = json.dumps(sorted(os.sched_getaffinity(0))).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class Served:
    """``report_cpus`` on a ``WSGIServer`` whose loop runs on a thread of its own; ``after`` is what
    that thread may run on once ``serve_forever`` returned."""

    def __init__(self, **options: Any) -> None:
        self.server = WSGIServer(report_cpus, **options)
        self.after: list[int] = []
        self.loop = threading.Thread(target=self._serve, name="test-httpd", daemon=True)
        self.loop.start()

    def _serve(self) -> None:
        self.server.serve_forever()
        self.after = sorted(os.sched_getaffinity(0))

    def cpus(self) -> list[int]:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=WAIT)
        try:
            connection.request("GET", "/")
            response = connection.getresponse()
            assert response.status == 200
            return json.loads(response.read())
        finally:
            connection.close()

    def stop(self) -> None:
        self.server.shutdown(WAIT)
        self.loop.join(WAIT)


@pytest.fixture
def served() -> Iterator[Any]:
    started: list[Served] = []

    def start(**options: Any) -> Served:
        started.append(Served(**options))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def test_a_request_runs_on_the_one_cpu_its_server_started_on(served: Any) -> None:
    first = served().cpus()
    assert first in one_cpu()
    served_twice = served()
    assert served_twice.cpus() == served_twice.cpus()


@pytest.mark.parametrize("index", [0, 1, len(ALLOWED) + 1])
def test_cpu_index_picks_that_allowed_cpu_modulo_their_number(served: Any, index: int) -> None:
    assert served(cpu_index=index).cpus() in one_cpu(index)


def test_pin_cpu_false_leaves_the_threads_on_every_allowed_cpu(served: Any) -> None:
    assert served(pin_cpu=False).cpus() == ALLOWED


def test_a_system_that_refuses_pinning_is_served_all_the_same(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, cpus: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setaffinity", refuse)  # what a seccomp sandbox answers
    assert served().cpus() == ALLOWED


#: A process that keeps one CPU busy (its only one) for at most a minute, the crowd of the next test.
HOG = "import os, sys, time\nos.sched_setaffinity(0, {int(sys.argv[1])})\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"


def test_a_server_whose_cpu_another_process_crowds_moves_to_a_quieter_one(served: Any) -> None:
    shared_random = random.getstate()  # the application's generator, which the looks must leave alone
    server = served(cpu_index=0)
    assert server.cpus() in one_cpu(0)
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(ALLOWED[0])])
    try:
        deadline = time.monotonic() + 20  # two looks are needed, each within 3 seconds of the last
        cpus = server.cpus()
        while PINNED and cpus == [ALLOWED[0]] and time.monotonic() < deadline:
            time.sleep(0.5)
            cpus = server.cpus()
    finally:
        hog.kill()
        hog.wait(WAIT)
    assert cpus in ([[cpu] for cpu in ALLOWED if cpu != ALLOWED[0]] if PINNED else [ALLOWED])
    assert random.getstate() == shared_random


def test_the_serving_thread_gets_its_cpus_back_when_the_server_stops() -> None:
    one = Served(cpu_index=1)
    assert one.cpus() in one_cpu(1)
    one.stop()
    assert not one.loop.is_alive()
    assert one.after == ALLOWED
    assert sorted(os.sched_getaffinity(0)) == ALLOWED  # the test's own thread was never touched


@pytest.fixture
def program(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    """``python shared_server.py``: ``mcp.run(transport="streamable-http")``, pinned unless the test
    is parametrized with ``False``."""
    env = server_env(None)
    env["MINIMCP_TEST_PIN_CPU"] = "1" if request.param else "0"
    with server_process([sys.executable, str(SERVERS / "shared_server.py")], env, cwd=SERVERS) as server:
        yield server


@pytest.mark.parametrize("program", [True], indirect=True)
def test_mcp_run_keeps_its_request_and_pool_threads_on_one_cpu(program: ServerProcess) -> None:
    with Client(program.base + "/mcp") as modern:
        on_the_server = modern.call_tool("cpus", {}).structured_content["result"]
    with Client(program.base + "/mcp", mode="legacy") as legacy:
        assert legacy.protocol_version == "2025-11-25"
        on_a_worker = legacy.call_tool("cpus_on_a_worker", {}).structured_content["result"]
    assert on_the_server in one_cpu()
    assert on_a_worker == on_the_server


@pytest.mark.parametrize("program", [False], indirect=True)
def test_mcp_run_pin_cpu_false_runs_anywhere(program: ServerProcess) -> None:
    with Client(program.base + "/mcp", mode="legacy") as legacy:
        assert legacy.call_tool("cpus", {}).structured_content["result"] == ALLOWED
        assert legacy.call_tool("cpus_on_a_worker", {}).structured_content["result"] == ALLOWED


def test_a_gunicorn_worker_runs_on_the_cpu_of_its_number() -> None:
    with server_process(worker_command(1), server_env(None), cwd=SERVERS) as server:
        with Client(server.base + "/mcp") as client:
            assert client.call_tool("cpus", {}).structured_content["result"] in one_cpu(0)


def test_an_app_on_gunicorn_gthread_keeps_the_worker_process_threads_on_one_cpu() -> None:
    """``mcp.wsgi_app()`` under another server's threads (``ProcessPin``): the first request pins
    every thread of the worker process, so the request threads and the MCP pool's agree."""
    with server_process(gunicorn_command(1), server_env(None), cwd=SERVERS) as server:
        with Client(server.base + "/mcp") as modern:
            first = modern.call_tool("cpus", {}).structured_content["result"]
            again = modern.call_tool("cpus", {}).structured_content["result"]
        with Client(server.base + "/mcp", mode="legacy") as legacy:
            on_a_worker = legacy.call_tool("cpus_on_a_worker", {}).structured_content["result"]
    assert first in one_cpu()
    assert again == first
    assert on_a_worker == first


def test_an_app_pins_only_under_a_threaded_production_server_unless_asked() -> None:
    """The decision alone, from the environ (nothing is pinned here: werkzeug's server, a
    one-thread worker and ``pin_cpu=False`` leave the process as it is)."""
    for enabled, environ in ((None, {"wsgi.multithread": True, "SERVER_SOFTWARE": "Werkzeug/3.1"}),
                             (None, {"wsgi.multithread": False, "SERVER_SOFTWARE": "gunicorn/27.0.1"}),
                             (True, {"wsgi.multithread": False}),
                             (False, {"wsgi.multithread": True, "SERVER_SOFTWARE": "gunicorn/27.0.1"})):
        pin = ProcessPin(enabled)
        pin.touch(environ)
        assert pin.cpu is None
    assert sorted(os.sched_getaffinity(0)) == ALLOWED
