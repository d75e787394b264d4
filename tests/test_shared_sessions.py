"""Legacy sessions, questions, cancels, standalone streams and listens across real processes.

Three server processes (``tests/servers/shared_server.py``) share one redis-server; each step of a
scenario is sent to the process the test names, over plain HTTP, so every hop is explicit. The
caller is whoever the ``X-Test-User`` header names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from cluster_support import Stream, programs
from conftest import BASE_HEADERS, LEGACY, TIMEOUT, RedisServer, ServerProcess, final_message, \
    initialize_params, modern_headers, modern_params, post, read_messages, request_message, wait_for

ALICE = {"X-Test-User": "alice"}


@pytest.fixture
def a_b_c(redis_server: RedisServer) -> Iterator[list[str]]:
    with programs(3, redis_server.url) as servers:
        yield [server.base + "/mcp" for server in servers]


class Session:
    """One legacy session, each request sent to the process its caller names."""

    def __init__(self, url: str, user: dict[str, str] = ALICE, capabilities: dict[str, Any] | None = None) -> None:
        self.user = user
        response = post(url, request_message("initialize", initialize_params(LEGACY, capabilities)), headers=user)
        assert response.status_code == 200, response.text
        self.id = response.headers["Mcp-Session-Id"]

    def headers(self, user: dict[str, str] | None = None) -> dict[str, str]:
        return {**BASE_HEADERS, "Mcp-Session-Id": self.id, "MCP-Protocol-Version": LEGACY, **(user or self.user)}

    def post(self, url: str, message: dict[str, Any], user: dict[str, str] | None = None,
             stream: bool = False) -> requests.Response:
        return requests.post(url, json=message, headers=self.headers(user), timeout=TIMEOUT, stream=stream)

    def notify(self, url: str, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        assert self.post(url, message).status_code == 202

    def call(self, url: str, name: str, arguments: dict[str, Any], id: Any = None) -> Stream:
        """A ``tools/call`` whose answer is read as it streams."""
        message = request_message("tools/call", {"name": name, "arguments": arguments}, id=id)
        return Stream(self.post(url, message, stream=True))

    def rpc(self, url: str, method: str, params: dict[str, Any] | None = None,
            user: dict[str, str] | None = None) -> requests.Response:
        return self.post(url, request_message(method, params or {}), user)


def test_an_answer_posted_on_one_process_reaches_the_worker_waiting_on_another(a_b_c: list[str]) -> None:
    a, b, c = a_b_c
    session = Session(a, capabilities={"elicitation": {}})
    session.notify(b, "notifications/initialized")
    on_a, on_b = session.call(a, "confirm", {"door": "east"}, id=1), session.call(b, "confirm", {"door": "west"}, id=2)
    asked = [on_a.next(), on_b.next()]
    assert [question["method"] for question in asked] == ["elicitation/create"] * 2
    assert asked[0]["id"] != asked[1]["id"]  # ids unique across processes, in one session
    for question in reversed(asked):
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": True}}}
        assert session.post(c, answer).status_code == 202
    assert on_a.next()["result"]["content"][0]["text"] == "east: accept True"
    assert on_b.next()["result"]["content"][0]["text"] == "west: accept True"


def test_progress_posted_on_one_process_reaches_the_question_asked_on_another(a_b_c: list[str]) -> None:
    """``ServerSession.send_request(..., progress_callback=)``: the client's progress on the question
    lands on a second process, its answer on a third, and the asker heard the progress."""
    a, b, c = a_b_c
    session = Session(a, capabilities={"sampling": {}})
    session.notify(b, "notifications/initialized")
    on_a = session.call(a, "sample_with_progress", {}, id=1)
    question = on_a.next()
    assert question["method"] == "sampling/createMessage"
    token = question["params"]["_meta"]["progressToken"]
    session.notify(b, "notifications/progress", {"progressToken": token, "progress": 1, "total": 2, "message": "one"})
    answer = {"jsonrpc": "2.0", "id": question["id"],
              "result": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}}
    assert session.post(c, answer).status_code == 202
    assert on_a.next()["result"]["content"][0]["text"] == "hello [(1, 2, 'one')]"


def test_delete_on_any_process_ends_the_session_everywhere_and_wakes_its_waiting_workers(a_b_c: list[str]) -> None:
    a, b, c = a_b_c
    session = Session(a, capabilities={"elicitation": {}})
    session.notify(a, "notifications/initialized")
    waiting = session.call(b, "confirm", {"door": "north"})
    assert waiting.next()["method"] == "elicitation/create"
    deleted = requests.delete(c, headers=session.headers(), timeout=TIMEOUT)
    assert deleted.status_code == 200
    ending = waiting.next()
    assert ending is None or "error" in ending or ending["result"].get("isError")
    for url in (a, b, c):
        gone = session.rpc(url, "tools/list")
        assert gone.status_code == 404 and gone.json()["error"]["message"] == "Session not found"


def test_a_cancel_posted_on_one_process_stops_the_call_running_on_another(a_b_c: list[str]) -> None:
    a, b, c = a_b_c
    session = Session(a)
    session.notify(a, "notifications/initialized")
    running = session.call(b, "hang", {"seconds": 60}, id="long")
    assert running.next()["params"]["data"].startswith("pid ")  # the call runs on b
    session.notify(c, "notifications/cancelled", {"requestId": "long", "reason": "changed my mind"})

    def counted() -> Any:  # the body stops on the cancel, long before its 60 s
        answer = session.rpc(b, "tools/call", {"name": "cancelled_calls", "arguments": {}})
        return final_message(answer)["result"]["structuredContent"]["result"]
    assert wait_for(lambda: counted() == 1, 30)
    assert running.messages.empty()  # and the cancelled call is not answered
    running.close()


def test_the_principal_is_checked_on_every_process(a_b_c: list[str]) -> None:
    a, b, c = a_b_c
    session = Session(a)
    session.notify(b, "notifications/initialized")
    for url in (a, b, c):
        stranger = session.rpc(url, "tools/list", user={"X-Test-User": "mallory"})
        assert stranger.status_code == 404
        assert session.rpc(url, "tools/list").status_code == 200
    anonymous = requests.post(c, json=request_message("tools/list"),
                              headers={**BASE_HEADERS, "Mcp-Session-Id": session.id}, timeout=TIMEOUT)
    assert anonymous.status_code == 404


def test_a_standalone_stream_hears_updates_subscribed_on_a_second_process_and_published_on_a_third(
        a_b_c: list[str]) -> None:
    a, b, c = a_b_c
    session = Session(a)
    session.notify(a, "notifications/initialized")
    standalone = Stream(requests.get(a, headers={**session.headers(), "Accept": "text/event-stream"},
                                     stream=True, timeout=TIMEOUT))
    assert session.rpc(b, "resources/subscribe", {"uri": "note://x"}).status_code == 200
    for url, uri in ((c, "note://y"), (b, "note://x"), (c, "note://x"), (a, "note://x")):
        assert session.rpc(url, "tools/call", {"name": "touch", "arguments": {"uri": uri}}).status_code == 200
    heard = [standalone.next() for _ in range(3)]
    assert [(m["method"], m["params"]["uri"]) for m in heard] == [("notifications/resources/updated", "note://x")] * 3
    standalone.close()


def test_a_standalone_stream_is_closed_from_another_process(a_b_c: list[str]) -> None:
    """``ctx.close_standalone_sse_stream()`` in a call served by one process ends the session's GET
    stream held by another, at once; the session takes a new one there."""
    a, b, _ = a_b_c
    session = Session(a)
    session.notify(a, "notifications/initialized")
    get_headers = {**session.headers(), "Accept": "text/event-stream"}
    standalone = Stream(requests.get(a, headers=get_headers, stream=True, timeout=TIMEOUT))
    assert session.rpc(b, "tools/call", {"name": "close_standalone", "arguments": {}}).status_code == 200
    assert standalone.next(timeout=5) is None
    again = requests.get(a, headers=get_headers, stream=True, timeout=TIMEOUT)
    assert again.status_code == 200
    again.close()


def listen(url: str, uris: list[str]) -> Stream:
    params = {"notifications": {"resourceSubscriptions": uris}}
    message = request_message("subscriptions/listen", modern_params(params))
    response = requests.post(url, json=message, headers={**BASE_HEADERS, **modern_headers("subscriptions/listen")},
                             stream=True, timeout=TIMEOUT)
    stream = Stream(response)
    assert stream.next()["method"] == "notifications/subscriptions/acknowledged"
    return stream


def modern_touch(url: str, uri: str) -> None:
    params = {"name": "touch", "arguments": {"uri": uri}}
    response = requests.post(url, json=request_message("tools/call", modern_params(params)),
                             headers={**BASE_HEADERS, **modern_headers("tools/call", params)}, timeout=TIMEOUT)
    assert response.status_code == 200 and "result" in response.json(), response.text


def test_a_change_published_on_any_process_reaches_every_listen_on_every_process_once(a_b_c: list[str]) -> None:
    listens = [listen(url, ["note://x", "note://end"]) for url in a_b_c]
    for url in a_b_c:
        modern_touch(url, "note://x")
    modern_touch(a_b_c[1], "note://end")  # published after the others: a duplicate would come before it
    for stream in listens:
        heard = [stream.next()["params"]["uri"] for _ in range(4)]
        assert heard == ["note://x", "note://x", "note://x", "note://end"]
        stream.close()


def test_a_process_that_stops_leaves_its_sessions_to_the_others(redis_server: RedisServer) -> None:
    with programs(2, redis_server.url) as (first, second):
        session = Session(first.base + "/mcp")
        session.notify(first.base + "/mcp", "notifications/initialized")
        stop(first)
        assert session.rpc(second.base + "/mcp", "tools/list").status_code == 200


def stop(server: ServerProcess) -> None:
    server.process.terminate()
    server.process.wait(20)


def test_a_stream_resumes_on_another_process_for_its_own_session_only(a_b_c: list[str]) -> None:
    a, b, c = a_b_c
    session = Session(a)
    session.notify(a, "notifications/initialized")
    first = session.post(a, request_message("tools/call", {"name": "chapters", "arguments": {}}, id="tale"))
    events = [line for line in first.text.splitlines() if line.startswith("id:")]
    told = [m["params"]["data"] for m in read_messages(first) if m.get("method") == "notifications/message"]
    assert told == ["chapter 1"]
    last_event_id = events[-1][3:].strip()
    stranger = Session(c)
    refused = requests.get(c, headers={**stranger.headers(), "Accept": "text/event-stream",
                                       "Last-Event-ID": last_event_id}, timeout=TIMEOUT)
    assert refused.status_code == 400 and "Last-Event-ID" in refused.text
    resumed = requests.get(b, headers={**session.headers(), "Accept": "text/event-stream",
                                       "Last-Event-ID": last_event_id}, timeout=TIMEOUT)
    rest = read_messages(resumed)
    assert [m["params"]["data"] for m in rest if m.get("method") == "notifications/message"] == ["chapter 2"]
    assert rest[-1]["id"] == "tale" and rest[-1]["result"]["content"][0]["text"] == "the end"


@pytest.mark.parametrize("options", [{"decode_responses": True}, {"protocol": 3}], ids=["decode_responses", "resp3"])
def test_a_redis_client_of_the_users_making_serves_sessions_streams_and_questions(redis_server: RedisServer,
                                                                                  options: dict[str, Any]) -> None:
    """``RedisBackend(client)`` takes the client as it is: one that decodes answers to text, or that
    speaks RESP3 (another shape for a stream read), shares sessions, questions and resumable streams
    as the default client does."""
    with programs(2, redis_server.url, client_options=options) as servers:
        a, b = [server.base + "/mcp" for server in servers]
        session = Session(a, capabilities={"elicitation": {}})
        session.notify(b, "notifications/initialized")
        asking = session.call(a, "confirm", {"door": "north"}, id=1)
        question = asking.next()
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": True}}}
        assert session.post(b, answer).status_code == 202
        assert asking.next()["result"]["content"][0]["text"] == "north: accept True"
        first = session.post(a, request_message("tools/call", {"name": "chapters", "arguments": {}}, id="tale"))
        assert [m["params"]["data"] for m in read_messages(first)] == ["chapter 1"]
        last_event_id = [line for line in first.text.splitlines() if line.startswith("id:")][-1][3:].strip()
        # resumed while the tool still runs: the other process waits on the stream for what comes next
        resumed = requests.get(b, headers={**session.headers(), "Accept": "text/event-stream",
                                           "Last-Event-ID": last_event_id}, timeout=TIMEOUT)
        rest = read_messages(resumed)
        assert [m["params"]["data"] for m in rest if m.get("method") == "notifications/message"] == ["chapter 2"]
        assert rest[-1]["id"] == "tale" and rest[-1]["result"]["content"][0]["text"] == "the end"


def test_minimcp_client_resumes_a_closed_stream_on_the_next_process(redis_server: RedisServer) -> None:
    from cluster_support import RoundRobin

    from minimcp import Client
    from minimcp.client.streamable_http import streamable_http_client

    told: list[str] = []
    with programs(2, redis_server.url) as servers:
        rotating = RoundRobin([server.base for server in servers])
        transport = streamable_http_client(servers[0].base + "/mcp", http_client=rotating)
        with Client(transport, mode="legacy", logging_callback=lambda params: told.append(params.data),
                    read_timeout_seconds=60) as client:
            assert client.call_tool("chapters", {}).content[0].text == "the end"
    assert told == ["chapter 1", "chapter 2"]
