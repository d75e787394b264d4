"""Legacy SSE resumability (SEP-1699) over real HTTP: event ids, the priming event with ``retry``,
``ctx.close_sse_stream()``, and GET + ``Last-Event-ID`` replay from the per-stream event log.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from werkzeug.serving import make_server

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

WAIT = 5.0
RETRY_MS = 250


@pytest.fixture
def served() -> Iterator[tuple[str, threading.Event]]:
    mcp: MCPServer[Any] = MCPServer("resume-test")
    release = threading.Event()

    @mcp.tool()
    def poll(ctx: Context) -> str:
        """Report progress, close the stream, and finish once the test says so."""
        ctx.report_progress(1, 2)
        ctx.close_sse_stream()
        release.wait(WAIT)
        ctx.report_progress(2, 2)
        return "finished after reconnect"

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Report progress once, then answer."""
        ctx.report_progress(1, 1)
        return "chatty done"

    app = mcp.wsgi_app(retry_interval=RETRY_MS, keepalive_interval=0.5)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/mcp", release
    finally:
        release.set()
        httpd.shutdown()
        thread.join(WAIT)
        app.close()


HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _session(url: str, version: str = "2025-11-25") -> dict[str, str]:
    """Initialize a legacy session; the headers every later request of it carries."""
    response = requests.post(url, headers=HEADERS, timeout=WAIT, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert response.status_code == 200
    headers = {**HEADERS, "Mcp-Session-Id": response.headers["Mcp-Session-Id"], "MCP-Protocol-Version": version}
    assert requests.post(url, headers=headers, timeout=WAIT,
                         json={"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
    return headers


def _events(response: requests.Response) -> list[dict[str, Any]]:
    """Parse a finished SSE body into events: ``id``, ``retry``, ``data`` (JSON or ``None``)."""
    events, current = [], {}
    for line in response.iter_lines(decode_unicode=True):
        if not line:
            if current:
                events.append(current)
            current = {}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            current[field] = value[1:] if value.startswith(" ") else value
    for event in events:
        event["data"] = json.loads(event["data"]) if event.get("data") else None
    return events


def _call(url: str, headers: dict[str, str], tool: str, request_id: int) -> requests.Response:
    return requests.post(url, headers=headers, stream=True, timeout=WAIT, json={
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": {"progressToken": f"p{request_id}"}}})


def test_closed_stream_is_resumed_with_last_event_id(served: tuple[str, threading.Event]) -> None:
    url, release = served
    headers = _session(url)
    response = _call(url, headers, "poll", 1)
    assert response.headers["Content-Type"].startswith("text/event-stream")
    posted = _events(response)  # ends without the result: the tool closed the stream

    priming = posted[0]
    assert priming["data"] is None and priming["id"] and priming["retry"] == str(RETRY_MS)
    assert posted[1]["data"]["method"] == "notifications/progress" and posted[1]["id"]
    resume_at = posted[-1]
    assert resume_at["data"] is None and resume_at["retry"] == str(RETRY_MS)
    assert not any(e["data"] and "result" in e["data"] for e in posted)
    ids = [e["id"] for e in posted]
    assert len(set(ids)) == len(ids)

    release.set()
    resumed = requests.get(url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": resume_at["id"]},
                           stream=True, timeout=WAIT)
    assert resumed.status_code == 200
    replayed = [e for e in _events(resumed) if e["data"] is not None]
    assert [e["data"].get("method") for e in replayed[:-1]] == ["notifications/progress"]
    assert replayed[-1]["data"]["id"] == 1
    assert replayed[-1]["data"]["result"]["content"][0]["text"] == "finished after reconnect"
    assert all(e["id"] not in ids for e in replayed)


def test_resuming_from_the_priming_event_replays_everything(served: tuple[str, threading.Event]) -> None:
    url, release = served
    headers = _session(url)
    posted = _events(_call(url, headers, "poll", 1))
    release.set()
    resumed = requests.get(url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": posted[0]["id"]},
                           stream=True, timeout=WAIT)
    methods = [e["data"].get("method", "result") for e in _events(resumed) if e["data"] is not None]
    assert methods == ["notifications/progress", "notifications/progress", "result"]


def test_resumption_is_not_a_second_standalone_stream(served: tuple[str, threading.Event]) -> None:
    url, release = served
    headers = _session(url)
    standalone = requests.get(url, headers={**headers, "Accept": "text/event-stream"}, stream=True, timeout=WAIT)
    try:
        assert standalone.status_code == 200
        posted = _events(_call(url, headers, "poll", 1))
        release.set()
        resumed = requests.get(url, headers={**headers, "Accept": "text/event-stream",
                                             "Last-Event-ID": posted[-1]["id"]}, stream=True, timeout=WAIT)
        assert resumed.status_code == 200
        assert _events(resumed)[-1]["data"]["id"] == 1
    finally:
        standalone.close()


def test_unknown_last_event_id_is_refused(served: tuple[str, threading.Event]) -> None:
    url, release = served
    headers = _session(url)
    posted = _events(_call(url, headers, "poll", 1))
    stream_id = posted[0]["id"].rpartition(":")[0]
    release.set()
    for bogus in ("nope:3", f"{stream_id}:999", f"{stream_id}:x", "no-separator"):
        response = requests.get(url, headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": bogus},
                                timeout=WAIT)
        assert response.status_code == 400, bogus
        assert response.json()["error"]["code"] == -32600


def test_events_of_an_uninterrupted_stream_carry_ids(served: tuple[str, threading.Event]) -> None:
    url, _ = served
    headers = _session(url)
    events = _events(_call(url, headers, "chatty", 1))
    assert events[0]["data"] is None and "retry" in events[0]
    assert [e["data"].get("method", "result") for e in events[1:]] == ["notifications/progress", "result"]
    assert all(e.get("id") for e in events)


def test_older_revisions_get_no_priming_event(served: tuple[str, threading.Event]) -> None:
    url, _ = served
    headers = _session(url, version="2025-06-18")
    events = _events(_call(url, headers, "chatty", 1))
    assert [e["data"].get("method", "result") for e in events] == ["notifications/progress", "result"]
    assert not any("id" in e or "retry" in e for e in events)


def test_close_sse_stream_is_a_no_op_on_2026_requests(served: tuple[str, threading.Event]) -> None:
    url, release = served
    release.set()
    version = "2026-07-28"
    response = requests.post(url, timeout=WAIT, stream=True, headers={
        **HEADERS, "MCP-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": "poll"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "poll", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "t"}}})
    events = _events(response)
    assert not any("id" in e for e in events)
    assert events[-1]["data"]["result"]["content"][0]["text"] == "finished after reconnect"


def test_a_session_forgets_finished_streams_past_their_ttl_at_its_next_sweep() -> None:
    """A finished stream is kept ``STREAM_TTL`` seconds; a busy session sweeps the expired ones at
    most every ``STREAM_SWEEP`` seconds, on the next stream it keeps, rather than on every one."""
    import time

    from minimcp.server.lowlevel import sessions
    from minimcp.server.lowlevel.outbox import EventLog
    from minimcp.server.lowlevel.sessions import Connection

    connection = Connection(protocol_version="2025-11-25")
    old = EventLog("old")
    connection.retain_stream(old)
    old.close({"jsonrpc": "2.0", "id": 1, "result": {}})
    old.finished_at = time.monotonic() - sessions.STREAM_TTL - 1  # finished longer ago than it is kept
    connection.retain_stream(EventLog("new"))  # within STREAM_SWEEP of the last sweep: not swept
    assert connection.stream("old") is old
    time.sleep(sessions.STREAM_SWEEP)
    connection.retain_stream(EventLog("newer"))
    assert connection.stream("old") is None
    assert connection.stream("new") is not None and connection.stream("newer") is not None


def test_past_max_streams_a_session_forgets_its_oldest_finished_stream_first() -> None:
    """Beyond ``MAX_STREAMS`` the oldest finished stream goes, whether or not it is the oldest one
    kept (a stream still running stays resumable); with none finished, the oldest goes."""
    from minimcp.server.lowlevel import sessions
    from minimcp.server.lowlevel.outbox import EventLog
    from minimcp.server.lowlevel.sessions import Connection

    connection = Connection(protocol_version="2025-11-25")
    logs = [EventLog(f"s{i}") for i in range(sessions.MAX_STREAMS)]
    for log in logs:
        connection.retain_stream(log)
    for log in logs[1:3]:
        log.close({"jsonrpc": "2.0", "id": 1, "result": {}})
    connection.retain_stream(EventLog("a"))  # s0 runs on: s1, the oldest finished, goes
    assert connection.stream("s0") is logs[0] and connection.stream("s1") is None
    connection.retain_stream(EventLog("b"))
    assert connection.stream("s2") is None
    connection.retain_stream(EventLog("c"))  # none finished: the oldest, s0, goes
    assert connection.stream("s0") is None and connection.stream("s3") is logs[3]
    logs[3].close({"jsonrpc": "2.0", "id": 1, "result": {}})
    connection.retain_stream(EventLog("d"))  # the oldest kept is finished: it goes
    assert connection.stream("s3") is None and connection.stream("s4") is logs[4]
