"""Sized for its load: real gunicorn masters of minimcp's worker class on a real redis-server.

- the line the README and the deployment guide recommend, as printed, serves 200 legacy clients
  eliciting at once, every call completed;
- a worker whose ``--threads`` cannot hold its app's ``max_workers`` and their clients' GET
  streams says so as it starts, naming the number to set, and the recommended line does not;
- a GET stream past the threads event streams may take is refused at once (``503``, ``Retry-After``,
  a message saying why), and a legacy elicitation still completes beside the streams held.

The measured time of the 200 is printed (``pytest -s``) for the report.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from cluster_support import SERVERS, WORKER, accept, server_env, worker_command
from conftest import BASE_HEADERS, LEGACY, RedisServer, ServerProcess, docs_source, legacy_handshake, next_line
from conftest import server_process
from test_gunicorn_worker import watch

from minimcp import Client

CLIENTS = 200
_TOO_FEW = "is too few for this app's legacy MCP clients"


def recommended_line(redis_server: RedisServer) -> ServerProcess:
    """The recommended gunicorn line as the docs print it (the README shows the same), with only
    the address (a port the system picks) and the app (this suite's server) swapped in."""
    printed = docs_source("how_to/gunicorn.sh").split()
    assert printed[:3] == ["gunicorn", "-k", WORKER] and printed[-1] == "server:app"
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert " ".join(printed) in readme
    command = [sys.executable, "-m", *printed[:-1], "--no-control-socket", "shared_server:app"]
    command[command.index("-b") + 1] = "127.0.0.1:0"
    return server_process(command, server_env(redis_server.url), cwd=SERVERS)


def test_200_legacy_clients_eliciting_at_once_all_complete_at_the_recommended_line(redis_server: RedisServer) -> None:
    with recommended_line(redis_server) as server:
        watch(server, 4)
        ready = threading.Barrier(CLIENTS)

        def one(n: int) -> tuple[str, float]:
            with Client(server.base + "/mcp", mode="legacy", elicitation_callback=accept,
                        read_timeout_seconds=120) as client:
                ready.wait(120)
                began = time.monotonic()
                text = client.call_tool("confirm", {"door": f"d{n}"}).content[0].text
                return text, time.monotonic() - began

        started = time.monotonic()
        with ThreadPoolExecutor(CLIENTS) as clients:
            done = list(clients.map(one, range(CLIENTS)))
        took = time.monotonic() - started
    slowest = max(seconds for _, seconds in done)
    print(f"\n{CLIENTS} legacy elicitations at once: all in {took:.1f}s with the sessions, slowest call {slowest:.1f}s")
    assert [text for text, _ in done] == [f"d{n}: accept True" for n in range(CLIENTS)]
    assert slowest < 30.0  # none waited on a timeout (the HTTP server's is 10 s, a question's 600 s)


def test_too_few_threads_are_named_at_start_up_and_the_recommended_line_is_quiet(redis_server: RedisServer) -> None:
    with server_process(worker_command(1, "--threads", "2"), server_env(redis_server.url), cwd=SERVERS) as server:
        line, _ = next_line(server.lines, lambda text: _TOO_FEW in text, 60.0, "the warning about --threads")
    assert "--threads 2 is too few" in line
    assert "32 call workers (max_workers)" in line and "Set --threads 73" in line
    with recommended_line(redis_server) as server:
        watch(server, 4)
        with Client(server.base + "/mcp", mode="legacy") as client:  # every worker has run past its check
            for _ in range(8):
                assert client.call_tool("pid", {}).structured_content["result"] > 0
        server.process.terminate()
        server.process.wait(60)
        assert _TOO_FEW not in server.output()


def test_a_get_stream_past_the_threads_is_refused_at_once_and_questions_still_complete(
        redis_server: RedisServer) -> None:
    """16 threads: streams may take 14 (an eighth, 2, is kept). The 15th GET stream is refused at
    once; a legacy client's elicitation (its own GET stream refused too) still completes."""
    with server_process(worker_command(1, "--threads", "16"), server_env(redis_server.url), cwd=SERVERS) as server:
        watch(server, 1)
        url = server.base + "/mcp"
        held: list[requests.Response] = []
        try:
            for _ in range(14):
                response = _open_stream(url)
                assert response.status_code == 200, response.text
                held.append(response)
            started = time.monotonic()
            refused = _open_stream(url)
            took = time.monotonic() - started
            print(f"\nthe GET stream past the threads was refused in {took * 1000:.0f} ms")
            assert refused.status_code == 503
            assert refused.headers["Retry-After"] == "1"
            assert refused.text.startswith("No thread is free for another event stream")
            assert took < 1.0
            with Client(url, mode="legacy", elicitation_callback=accept, read_timeout_seconds=60) as client:
                assert client.call_tool("confirm", {"door": "side"}).content[0].text == "side: accept True"
        finally:
            for response in held:
                response.close()


def _open_stream(url: str) -> requests.Response:
    """A legacy session's GET stream, open (its headers read, its body left to come)."""
    session = legacy_handshake(url)
    return requests.get(url, stream=True, timeout=30, headers={
        **BASE_HEADERS, "Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
        "MCP-Protocol-Version": LEGACY})
