"""More faults and every limit: each ends in a clear answer within a measured bound, never a hang.

Faults on legacy elicitation beyond ``test_legacy_faults.py``: the session expires while a worker
waits on the client, and the app is closed with workers blocked. Limits: JSON nesting depth over
HTTP and stdio, concurrent sessions, outstanding questions per session, a saturated worker pool
under load. Each fault test asserts the time until the worker is released and that no thread
outlives its call; the measured times are printed (``pytest -s``) for the report.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from conftest import BASE_HEADERS, LEGACY, busy_threads, legacy_handshake, post, request_message, wait_for
import pytest
import requests
from pydantic import BaseModel
from test_legacy_faults import open_call, rest_of_stream
from test_stdio_server import StdioPeer

from minimcp import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context


class Ok(BaseModel):
    ok: bool


def asking_server(outcomes: list[tuple[str, float]], asked: list[float] | None = None, **options: Any) -> MCPServer:
    """``ask`` elicits and records when it asked (in ``asked``) and how its wait ended and when;
    ``work`` computes; ``echo`` echoes."""
    mcp = MCPServer("MoreFaults", **options)

    @mcp.tool()
    def ask(ctx: Context) -> str:
        if asked is not None:
            asked.append(time.monotonic())
        try:
            return ctx.elicit("Sure?", schema=Ok).action
        except MCPError as exc:
            outcomes.append((f"{exc.code} {exc}", time.monotonic()))
            raise

    @mcp.tool()
    def ask_or_report(ctx: Context) -> str:
        try:
            return ctx.elicit("Sure?", schema=Ok).action
        except MCPError as exc:
            return f"refused: {exc.code} {exc}"

    @mcp.tool()
    def work(seconds: float) -> str:
        time.sleep(seconds)
        return "worked"

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp


def settle(baseline: int, slack: int = 0) -> bool:
    """Whether the thread count comes back to ``baseline`` (plus pool threads kept for reuse)."""
    return wait_for(lambda: busy_threads() <= baseline + slack, 5)


# --- the session expires while its worker waits ------------------------------------------------------
def test_an_expiring_session_releases_its_waiting_worker(serve_wsgi: Callable[[Any], str],
                                                         request: pytest.FixtureRequest) -> None:
    outcomes: list[tuple[str, float]] = []
    asked: list[float] = []
    idle = 0.5
    # A back-channel timeout far beyond the expiry, so the answer's code says which of the two
    # released the worker: expiry gives -32000 "Connection closed", the timeout -32001.
    app = asking_server(outcomes, asked, back_channel_timeout=60).wsgi_app(keepalive_interval=0.05)
    url = serve_wsgi(app) + app.path
    request.addfinalizer(app.close)
    # The idle timeout is shortened once the question is out, so a test client slowed down by a
    # loaded machine cannot lose its session during the handshake instead.
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    baseline = busy_threads()
    response, (_, lines) = open_call(session)
    app.sessions.idle_timeout = idle
    final = rest_of_stream(lines)[-1]  # the client holds the stream open and sends nothing
    # Measured from the moment the server asked, which is when the client's idle clock starts:
    # the client cannot answer sooner, however long the call took to get there.
    released = outcomes[0][1] - asked[0]
    print(f"\nsession expiry (idle_timeout={idle}s): worker released {released:.3f}s after the question")
    assert final["error"] == {"code": -32000, "message": "Connection closed"}
    assert outcomes[0][0] == "-32000 Connection closed"
    assert released >= idle
    assert session.post(request_message("ping")).status_code == 404
    assert settle(baseline, slack=1)  # the pool keeps its one worker thread for reuse


def test_a_question_asked_after_long_work_gives_the_client_its_whole_idle_timeout(
        serve_wsgi: Callable[[Any], str], request: pytest.FixtureRequest) -> None:
    """The idle clock starts when the client is asked, not when the call came in: a tool that
    computed past the idle timeout before asking still gets its answer. (Before, the answer found
    the session expired: 404, and the worker woke with "Connection closed".)"""
    idle = 1.0
    mcp = MCPServer("SlowAsker")
    computing = threading.Event()
    done_computing = threading.Event()

    @mcp.tool()
    def compute_then_ask(ctx: Context) -> str:
        computing.set()
        assert done_computing.wait(30), "the test never let the computation end"
        return ctx.elicit("Sure?", schema=Ok).action

    app = mcp.wsgi_app(keepalive_interval=0.05)
    url = serve_wsgi(app) + app.path
    request.addfinalizer(app.close)
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    app.sessions.idle_timeout = idle
    message = request_message("tools/call", {"name": "compute_then_ask", "arguments": {}})
    response = requests.post(session.url, data=json.dumps(message), stream=True, timeout=30,
                             headers={**BASE_HEADERS, "Mcp-Session-Id": session.session_id,
                                      "MCP-Protocol-Version": session.protocol_version})
    assert computing.wait(30)
    time.sleep(idle * 1.5)  # the call computes (and so keeps its session) for longer than the idle timeout
    done_computing.set()
    lines = response.iter_lines()
    question = next(json.loads(line[5:]) for line in lines if line.startswith(b"data:") and line[5:].strip())
    assert question["method"] == "elicitation/create"
    answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": True}}}
    assert session.post(answer).status_code == 202
    final = rest_of_stream(lines)[-1]
    assert final["result"]["content"][0]["text"] == "accept", final


def test_a_computing_worker_keeps_its_session_and_answers_renew_it(serve_http: Callable[..., str]) -> None:
    url = serve_http(asking_server([]), session_idle_timeout=0.3, keepalive_interval=0.05)
    session = legacy_handshake(url)
    assert session.call_tool("work", {"seconds": 0.8})["content"][0]["text"] == "worked"
    for _ in range(6):  # 0.6 s of traffic, each request well inside the idle timeout
        time.sleep(0.1)
        assert session.post({"jsonrpc": "2.0", "method": "notifications/progress"}).status_code == 202
    assert session.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"
    time.sleep(0.5)
    assert session.post(request_message("ping")).status_code == 404


# --- the app closes with workers blocked ----------------------------------------------------------------
def test_closing_the_app_wakes_every_blocked_worker(serve_wsgi: Callable[[Any], str]) -> None:
    outcomes: list[tuple[str, float]] = []
    mcp = asking_server(outcomes)
    app = mcp.wsgi_app(keepalive_interval=0.05)
    url = serve_wsgi(app) + app.path
    sessions = [legacy_handshake(url, capabilities={"elicitation": {}}) for _ in range(3)]
    baseline = busy_threads()
    streams = [open_call(s)[1][1] for s in sessions]
    started = time.monotonic()
    app.close()
    finals = [rest_of_stream(lines)[-1] for lines in streams]
    assert wait_for(lambda: len(outcomes) == 3)
    slowest = max(at for _, at in outcomes) - started
    print(f"\napp.close(): 3 blocked workers released within {slowest:.3f}s")
    assert slowest < 0.5
    assert all(f["error"] == {"code": -32000, "message": "Connection closed"} for f in finals), finals
    assert [o for o, _ in outcomes] == ["-32000 Connection closed"] * 3
    assert settle(baseline)  # the pool was shut down: its threads are gone too


# --- JSON nesting depth, over HTTP and stdio -------------------------------------------------------------
def nested(depth: int) -> bytes:
    """A tools/list request whose params hold ``depth`` levels in total (the envelope counts)."""
    inner = depth - 2
    return (b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":' + b"[" * inner + b"]" * inner + b"}}")


def test_nesting_depth_over_http(serve_http: Callable[..., str]) -> None:
    url = serve_http(asking_server([]))
    session = legacy_handshake(url)
    at_limit = session.post(nested(64), raw=True)
    assert at_limit.status_code == 200 and "result" in at_limit.json(), at_limit.text
    for depth in (65, 100_000):
        refused = session.post(nested(depth), raw=True)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32700
    assert session.call_tool("echo", {"text": "fine"})["content"][0]["text"] == "fine"


def test_nesting_depth_over_stdio() -> None:
    peer = StdioPeer()
    try:
        peer.handshake(LEGACY)
        peer.send_raw(nested(64) + b"\n")
        assert "result" in peer.receive()
        for depth in (65, 100_000):
            peer.send_raw(nested(depth) + b"\n")
            answer = peer.receive()
            assert answer["error"]["code"] == -32700 and answer["id"] is None, answer
        assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})["result"]["content"][0][
            "text"] == "x"
        assert peer.close_stdin() == 0
    finally:
        peer.kill()


# --- concurrent sessions ----------------------------------------------------------------------------------
def test_max_sessions_refuses_then_recovers(serve_http: Callable[..., str]) -> None:
    url = serve_http(asking_server([]), max_sessions=2, session_idle_timeout=0.3)
    first, second = legacy_handshake(url), legacy_handshake(url)
    message = request_message("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                             "clientInfo": {"name": "third", "version": "1"}})
    refused = post(url, message)
    assert refused.status_code == 503 and "Mcp-Session-Id" not in refused.headers
    assert refused.json()["error"] == {"code": -32600, "message": "Too many sessions; try again later"}
    assert first.delete().status_code == 200
    third = legacy_handshake(url)  # a slot freed by DELETE
    assert third.call_tool("echo", {"text": "3"})["content"][0]["text"] == "3"
    assert second.call_tool("echo", {"text": "2"})["content"][0]["text"] == "2"
    time.sleep(0.5)  # both idle past the timeout: the next initialize sweeps them away
    legacy_handshake(url)
    legacy_handshake(url)


# --- outstanding questions per session -------------------------------------------------------------------
def test_outstanding_questions_per_session_are_capped(serve_http: Callable[..., str]) -> None:
    url = serve_http(asking_server([]), max_pending_per_session=1)
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    response, (event, lines) = open_call(session)
    refused = session.call_tool("ask_or_report")
    assert refused["content"][0]["text"] == (
        "refused: -32603 Too many requests awaiting this client's answers (limit 1)")
    assert session.post({"jsonrpc": "2.0", "id": event["id"], "result": {"action": "decline"}}).status_code == 202
    assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "decline"
    again, (event, lines) = open_call(session)  # the slot is free again
    assert session.post({"jsonrpc": "2.0", "id": event["id"], "result": {"action": "accept",
                                                                          "content": {"ok": True}}}).status_code == 202
    assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "accept"


# --- a saturated pool recovers under load ------------------------------------------------------------------
def test_a_saturated_pool_refuses_fast_and_recovers_under_load(serve_http: Callable[..., str]) -> None:
    # One session may hold the whole pool here, and queue for it: its shares exceed the pool.
    url = serve_http(asking_server([], max_workers=2, worker_wait_timeout=0.3, max_calls_per_principal=16,
                                   max_questions_per_principal=2))
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    held = [open_call(session)[1] for _ in range(2)]  # both workers wait on the client

    def echo(i: int) -> tuple[dict[str, Any], float]:
        started = time.monotonic()
        message = request_message("tools/call", {"name": "echo", "arguments": {"text": str(i)}})
        response = session.post(message)
        return response.json(), time.monotonic() - started

    with ThreadPoolExecutor(8) as load:
        refused = list(load.map(echo, range(8)))
    assert all(a["error"]["code"] == -32603 and a["error"]["message"].startswith("Server busy") for a, _ in refused)
    assert max(t for _, t in refused) < 2.0
    for event, lines in held:
        session.post({"jsonrpc": "2.0", "id": event["id"], "result": {"action": "decline"}})
        assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "decline"
    with ThreadPoolExecutor(8) as load:
        served = list(load.map(echo, range(40)))
    assert all(a["result"]["content"][0]["text"] == str(i) for i, (a, _) in enumerate(served)), served
