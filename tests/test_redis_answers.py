"""A client's answers on a legacy session: taken only for a question that awaits one, once, bounded.

Each test runs on the memory backend and on a real redis-server; the Redis ones also look at what
the database holds, so an answer to nothing is seen to leave nothing behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Callable

import pytest
import redis
import requests
from conftest import BASE_HEADERS, TIMEOUT, LegacySession, RedisServer, legacy_handshake, request_message
from pydantic import BaseModel

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.jsonrpc import MCPError
from minimcp.server import MCPServer
from minimcp.server.lowlevel.pending import MAX_ANSWER_BYTES
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult

ELICITING = {"elicitation": {}}


class Ok(BaseModel):
    ok: bool


def asking(backend: str | None, outcomes: list[str] | None = None, **options: Any) -> MCPServer:
    mcp = MCPServer("Answers", backend=backend, **options)

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        try:
            answer = ctx.elicit(f"Open {door}?", schema=Ok)
        except MCPError as failed:
            if outcomes is not None:
                outcomes.append(f"{failed.code} {failed.message}")
            raise
        return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"

    return mcp


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "memory":
        yield None
    else:
        yield request.getfixturevalue("redis_server").url


def database(backend: str | None) -> redis.Redis | None:
    if backend is None:
        return None
    return redis.Redis.from_url(backend)


def held(db: redis.Redis | None) -> dict[bytes, int]:
    """Every key the database holds and the bytes it takes (heartbeats aside: they come and go)."""
    if db is None:
        return {}
    return {key: int(db.memory_usage(key) or 0) for key in db.scan_iter("*") if b":alive:" not in key}


def kept(db: redis.Redis | None) -> list[bytes]:
    """What the database keeps of answers and of questions awaiting them: kept answers, the
    sessions' question fields."""
    if db is None:
        return []
    answers = list(db.scan_iter("*:ans:*"))
    questions = [field for key in db.scan_iter("*:s:*") for field in db.hkeys(key) if field.startswith(b"q:")]
    return answers + questions


class Call:
    """A ``confirm`` call on its own streamed POST, read up to the question it asks."""

    def __init__(self, session: LegacySession, url: str | None = None) -> None:
        message = request_message("tools/call", {"name": "confirm", "arguments": {"door": "front"}})
        self.response = requests.post(url or session.url, json=message, stream=True, timeout=TIMEOUT, headers={
            **BASE_HEADERS, "Mcp-Session-Id": session.session_id, "MCP-Protocol-Version": session.protocol_version})
        self.lines = self.response.iter_lines()
        self.question = next(message for message in self.messages() if message.get("method") == "elicitation/create")

    def messages(self) -> Iterator[dict[str, Any]]:
        return (json.loads(line[5:]) for line in self.lines if line.startswith(b"data:") and line[5:].strip())

    def final(self) -> dict[str, Any]:
        return [message for message in self.messages() if "id" in message and "method" not in message][-1]


def accept(request_id: Any, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept", "content": {"ok": True}, **extra}}


def refused(response: requests.Response, words: str) -> None:
    assert response.status_code == 400, (response.status_code, response.text)
    body = response.json()
    assert body["id"] is None and body["error"]["code"] == -32600, body
    assert words in body["error"]["message"], body


def test_answers_to_no_question_are_refused_and_leave_nothing_behind(backend: str | None,
                                                                     serve_http: Callable[..., str]) -> None:
    session = legacy_handshake(serve_http(asking(backend)), capabilities=ELICITING)
    db = database(backend)
    before = held(db)
    megabyte = "x" * (1024 * 1024)
    for _ in range(3):
        refused(session.post(accept(999)), "No question of this session awaits an answer with id 999")
        refused(session.post(accept(7, padding=megabyte)), "No question of this session awaits an answer with id 7")
        refused(session.post(accept("q" * (3 * 1024 * 1024))), "at most 64 characters as JSON")
        refused(session.post(accept(True)), "'id' must be a string or an integer")
        refused(session.post(accept({"made": "up"})), "'id' must be a string or an integer")
        refused(session.post({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "no"}}), "with id 3")
    assert held(db) == before
    call = Call(session)
    assert session.post(accept(call.question["id"])).status_code == 202
    refused(session.post(accept(call.question["id"])), "is answered already")  # taken once
    assert call.final()["result"]["content"][0]["text"] == "front: accept True"
    assert kept(db) == []  # the question's own registration went with its answer


def test_an_answer_with_an_id_of_another_type_is_no_answer(backend: str | None, serve_http: Callable[..., str]) -> None:
    """The server asks with integer ids: ``"1"`` is not the answer to question ``1``."""
    session = legacy_handshake(serve_http(asking(backend)), capabilities=ELICITING)
    call = Call(session)
    refused(session.post(accept(str(call.question["id"]))), f'with id "{call.question["id"]}"')
    assert session.post(accept(call.question["id"])).status_code == 202
    assert call.final()["result"]["content"][0]["text"] == "front: accept True"


def test_an_answer_over_the_limit_fails_its_question_at_once_naming_the_limit(
        backend: str | None, serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    session = legacy_handshake(serve_http(asking(backend, outcomes)), capabilities=ELICITING)
    db = database(backend)
    call = Call(session)
    huge = accept(call.question["id"], padding="x" * MAX_ANSWER_BYTES)
    refused(session.post(huge), f"over the {MAX_ANSWER_BYTES} bytes an answer may hold")
    final = call.final()
    assert final["error"]["code"] == -32600 and str(MAX_ANSWER_BYTES) in final["error"]["message"], final
    assert outcomes and outcomes[0].startswith("-32600 The answer to question")
    assert kept(db) == []


def test_an_answer_on_another_process_is_taken_once_and_one_to_nothing_is_refused_there(
        redis_server: RedisServer, serve_http: Callable[..., str]) -> None:
    first, second = serve_http(asking(redis_server.url)), serve_http(asking(redis_server.url))
    session = legacy_handshake(first, capabilities=ELICITING)
    db = database(redis_server.url)
    call = Call(session)  # asked on the first process
    on_second = LegacySession(second, session.session_id, session.protocol_version)
    refused(on_second.post(accept(call.question["id"] + 1)), "No question of this session awaits")
    refused(on_second.post(accept("q" * 4096)), "at most 64 characters as JSON")
    assert on_second.post(accept(call.question["id"])).status_code == 202
    refused(on_second.post(accept(call.question["id"])), "is answered already")
    refused(session.post(accept(call.question["id"])), "is answered already")
    assert call.final()["result"]["content"][0]["text"] == "front: accept True"
    assert kept(db) == []  # the answer kept for the asking process was handed over and deleted


def test_a_late_answer_is_taken_and_dropped_on_any_process(backend: str | None, serve_http: Callable[..., str]) -> None:
    """The question timed out: its answer comes too late for the worker, but it answers a question
    the server asked, so the client is not told it answered nothing."""
    outcomes: list[str] = []
    url = serve_http(asking(backend, outcomes, back_channel_timeout=0.3))
    session = legacy_handshake(url, capabilities=ELICITING)
    db = database(backend)
    call = Call(session)
    assert call.final()["error"]["code"] == -32001
    assert outcomes == ["-32001 Request 'elicitation/create' timed out"]
    where = session if backend is None else LegacySession(serve_http(asking(backend)), session.session_id,
                                                          session.protocol_version)
    assert where.post(accept(call.question["id"])).status_code == 202
    refused(where.post(accept(call.question["id"])), "is answered already")
    assert kept(db) == []


def test_a_real_client_answers_its_elicitations_on_a_shared_session(backend: str | None,
                                                                    serve_http: Callable[..., str]) -> None:
    url = serve_http(asking(backend))

    def agree(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    with Client(streamable_http_client(url), mode="legacy", elicitation_callback=agree) as client:
        texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(3)]
    assert texts == [f"d{n}: accept True" for n in range(3)]
