"""minimcp's gunicorn worker class (``-k minimcp.httpd.gunicorn.Worker``): a real gunicorn master
with real worker processes serving ``tests/servers/shared_server.py``, both eras, and gunicorn's
process management (graceful ``TERM``, ``HUP`` reload, ``--max-requests``, ``--keep-alive 0``).

Two workers share a real redis-server (``backend=``), as the gthread scale-out tests do: a legacy
session's requests land on either process.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_support import SERVERS, WORKER, accept, client_of, pids_answering, server_env, worker_command
from conftest import RedisServer, ServerProcess, next_line, docs_source, server_process, wait_for

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client

ROUNDS = 6
_BOOTED = re.compile(r"Booting worker with pid: (\d+)")
_EXITED = re.compile(r"Worker exiting \(pid: (\d+)\)")


def watch(server: ServerProcess, boots: int, exits: frozenset[int] = frozenset()) -> set[int]:
    """Read the master's output until ``boots`` more workers booted and each of ``exits`` exited
    (in whatever order the processes print it); the pids of the booted ones."""
    started: set[int] = set()
    ended: set[int] = set()
    while len(started) < boots or not exits <= ended:
        line, _ = next_line(server.lines, lambda text: bool(_BOOTED.search(text) or _EXITED.search(text)), 60.0,
                            f"{boots} workers booting and {sorted(exits)} exiting")
        if booted := _BOOTED.search(line):
            started.add(int(booted.group(1)))
        elif exited := _EXITED.search(line):
            ended.add(int(exited.group(1)))
    return started


@pytest.fixture
def two_workers(redis_server: RedisServer) -> Iterator[tuple[ServerProcess, set[int]]]:
    """``gunicorn -w 2 -k minimcp.httpd.gunicorn.Worker`` sharing ``redis_server``, and its workers' pids."""
    with server_process(worker_command(2), server_env(redis_server.url), cwd=SERVERS) as server:
        yield server, watch(server, 2)


def test_legacy_elicitation_round_trips_across_two_worker_processes(two_workers: tuple[ServerProcess, set[int]]) -> None:
    server, workers = two_workers
    client, _ = client_of(server, mode="legacy", elicitation_callback=accept, read_timeout_seconds=60)
    with client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(ROUNDS)]
        assert client.protocol_version == "2025-11-25"
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]
    assert set(pids_answering(server, 8, mode="legacy")) <= workers


def test_modern_elicitation_round_trips_across_two_worker_processes(two_workers: tuple[ServerProcess, set[int]]) -> None:
    server, workers = two_workers
    client, _ = client_of(server, elicitation_callback=accept)
    with client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(ROUNDS)]
        assert client.protocol_version == "2026-07-28"
    assert texts == [f"d{n}: accept True" for n in range(ROUNDS)]
    assert set(pids_answering(server, 8)) <= workers


def test_the_guides_gunicorn_command_serves_both_eras_elicitation_included(redis_server: RedisServer) -> None:
    """The gunicorn command the deployment guide recommends (docs/how-to/deploy.md), as printed, with only the address (a
    port the system picks) and the app (this suite's server, on the shared backend the section
    sets up) swapped in."""
    printed = docs_source("how_to/gunicorn.sh").split()
    assert printed[:3] == ["gunicorn", "-k", WORKER] and printed[-1] == "server:app"
    command = [sys.executable, "-m", *printed[:-1], "--no-control-socket", "shared_server:app"]
    command[command.index("-b") + 1] = "127.0.0.1:0"
    with server_process(command, server_env(redis_server.url), cwd=SERVERS) as server:
        for mode in ("legacy", "auto"):
            with Client(server.base + "/mcp", mode=mode, elicitation_callback=accept) as client:
                assert client.call_tool("confirm", {"door": mode}).content[0].text == f"{mode}: accept True"
                assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")


def test_term_lets_the_request_in_flight_finish_then_the_master_exits(two_workers: tuple[ServerProcess, set[int]]) -> None:
    server, _ = two_workers
    terminated = threading.Event()

    def on_log(params: Any) -> None:  # the call is running on a worker: stop gunicorn now
        if str(params.data).startswith("pid ") and not terminated.is_set():
            terminated.set()
            os.kill(server.process.pid, signal.SIGTERM)

    client = Client(streamable_http_client(server.base + "/mcp"), mode="legacy", logging_callback=on_log,
                    read_timeout_seconds=60)
    with client:
        result = client.call_tool("hang", {"seconds": 2})
    assert terminated.is_set()
    assert result.content[0].text == "slept"
    assert server.process.wait(30) == 0
    assert "Shutting down: Master" in server.output()


def test_int_exits_at_once_with_a_request_in_flight(two_workers: tuple[ServerProcess, set[int]]) -> None:
    """A quick stop: the master and its workers are gone long before the running call would end."""
    from minimcp import MCPError

    server, _ = two_workers
    interrupted = threading.Event()

    def on_log(params: Any) -> None:
        if str(params.data).startswith("pid ") and not interrupted.is_set():
            interrupted.set()
            os.kill(server.process.pid, signal.SIGINT)

    client = Client(streamable_http_client(server.base + "/mcp"), mode="legacy", logging_callback=on_log,
                    read_timeout_seconds=120)
    with pytest.raises(MCPError):
        with client:
            client.call_tool("hang", {"seconds": 100})
    assert interrupted.is_set()
    assert server.process.wait(30) == 0


def test_hup_reloads_the_workers_and_the_new_ones_serve(two_workers: tuple[ServerProcess, set[int]]) -> None:
    server, old = two_workers
    assert set(pids_answering(server, 4)) <= old
    server.process.send_signal(signal.SIGHUP)
    new = watch(server, 2, frozenset(old))
    assert not new & old
    assert set(pids_answering(server, 6, mode="legacy", elicitation_callback=accept)) <= new
    assert set(pids_answering(server, 6)) <= new


def test_max_requests_keep_alive_0_and_the_access_log(redis_server: RedisServer) -> None:
    """After 3 requests the worker is replaced; every answer says ``Connection: close``; each is logged."""
    command = worker_command(1, "--max-requests", "3", "--keep-alive", "0", "--access-logfile", "-")
    with server_process(command, server_env(redis_server.url), cwd=SERVERS) as server:
        (first,) = watch(server, 1)
        closes = []
        for _ in range(3):
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            connection.request("GET", "/no-such-path?n=1")
            response = connection.getresponse()
            response.read()
            closes.append(response.getheader("Connection"))
            connection.close()
        assert closes == ["close"] * 3
        for _ in range(3):
            next_line(server.lines, lambda line: '"GET /no-such-path?n=1 HTTP/1.1" 404' in line, 60.0, "an access log line")
        (second,) = watch(server, 1, frozenset({first}))
        assert second != first
        assert pids_answering(server, 1) == [second]


def heartbeat(pid: int) -> float:
    """The mtime of worker ``pid``'s heartbeat file (gunicorn's unlinked ``wgunicorn-`` file, which
    the worker's ``notify()`` touches and the master watches against ``--timeout``)."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if "wgunicorn-" in os.readlink(f"/proc/{pid}/fd/{fd}"):
            return os.stat(f"/proc/{pid}/fd/{fd}").st_mtime
    raise AssertionError(f"worker {pid} holds no heartbeat file")


def test_the_heartbeat_beats_while_a_request_runs_past_timeout_and_keep_alive_closes_idle_connections() -> None:
    with server_process(worker_command(1, "--timeout", "4", "--keep-alive", "1"), server_env(None),
                        cwd=SERVERS) as server:
        (worker,) = watch(server, 1)
        client = Client(streamable_http_client(server.base + "/mcp"), read_timeout_seconds=60)
        with client:
            answers: list[str] = []
            call = threading.Thread(target=lambda: answers.append(client.call_tool("hang", {"seconds": 9}).content[0].text),
                                    name="test-call", daemon=True)
            call.start()
            for _ in range(3):
                beat = heartbeat(worker)
                assert wait_for(lambda beat=beat: heartbeat(worker) > beat, 10.0)
            call.join(60)
            assert answers == ["slept"]
            assert client.call_tool("pid", {}).structured_content["result"] == worker
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as idle:
            idle.sendall(b"GET /no-such-path HTTP/1.1\r\nHost: x\r\n\r\n")
            assert idle.recv(65536).startswith(b"HTTP/1.1 404")
            assert idle.recv(65536) == b""  # closed by the server after --keep-alive 1, well within 30 s


def test_keep_alive_connections_past_threads_stay_open() -> None:
    """``--threads`` bounds the requests running at once, not the connections: idle keep-alive
    connections hold no thread, so a client past ``--threads`` does not close another's."""
    with server_process(worker_command(1, "--threads", "2"), server_env(None), cwd=SERVERS) as server:
        connections = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=30) for _ in range(5)]
        sockets = []
        for connection in connections:
            connection.request("GET", "/no-such-path")
            assert connection.getresponse().read() is not None
            sockets.append(connection.sock)
        for connection, sock in zip(connections, sockets):
            connection.request("GET", "/no-such-path")
            assert connection.getresponse().status == 404
            assert connection.sock is sock  # the same connection, not a new one
            connection.close()


def test_every_listener_gunicorn_binds_is_served() -> None:
    with server_process(worker_command(1, "-b", "127.0.0.1:0"), server_env(None), cwd=SERVERS) as server:
        listening = next(line for line in server.banner if "Listening at:" in line)
        ports = [int(port) for port in re.findall(r"http://127\.0\.0\.1:(\d+)", listening)]
        assert len(set(ports)) == 2
        for port in ports:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", "/no-such-path")
            assert connection.getresponse().status == 404
            connection.close()


def test_a_unix_socket_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(worker_command(1, bind=f"unix:{tmp_path / 'mcp.sock'}"), env=server_env(None), cwd=SERVERS, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "serves TCP listeners only" in done.stdout + done.stderr
