"""A legacy worker blocked on a question always comes back: DELETE, disconnect, timeout, bad answers."""

import json
import time
from typing import Any, Callable

import requests
from conftest import BASE_HEADERS, busy_threads, legacy_handshake, request_message, wait_for
from pydantic import BaseModel

from minimcp import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context


class Ok(BaseModel):
    ok: bool


def asking_server(outcomes: list[str], **options: Any) -> MCPServer:
    mcp = MCPServer("Faults", **options)

    @mcp.tool()
    def ask(ctx: Context) -> str:
        try:
            return ctx.elicit("Sure?", schema=Ok).action
        except MCPError as exc:
            outcomes.append(f"{exc.code} {exc}")
            raise

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp


def open_call(session: Any) -> tuple[requests.Response, Any]:
    """Start ``ask`` on a streamed POST and read up to its elicitation request."""
    message = request_message("tools/call", {"name": "ask", "arguments": {}})
    response = requests.post(session.url, data=json.dumps(message), stream=True, timeout=30,
                             headers={**BASE_HEADERS, "Mcp-Session-Id": session.session_id,
                                      "MCP-Protocol-Version": session.protocol_version})
    lines = response.iter_lines()
    for line in lines:
        if line.startswith(b"data:") and line[5:].strip():
            event = json.loads(line[5:])
            if event.get("method") == "elicitation/create":
                return response, (event, lines)
    raise AssertionError("no elicitation/create on the stream")


def rest_of_stream(lines: Any) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in lines if line.startswith(b"data:") and line[5:].strip()]


def test_deleting_the_session_wakes_the_worker_with_connection_closed(serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    url = serve_http(asking_server(outcomes))
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    response, (_, lines) = open_call(session)
    started = time.monotonic()
    assert session.delete().status_code == 200
    final = rest_of_stream(lines)[-1]
    assert final["error"]["code"] == -32000 and final["error"]["message"] == "Connection closed"
    assert time.monotonic() - started < 2
    assert outcomes == ["-32000 Connection closed"]


def test_a_client_that_disconnects_frees_the_worker(serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    url = serve_http(asking_server(outcomes), keepalive_interval=0.05)
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    response, _ = open_call(session)
    response.close()
    assert wait_for(lambda: outcomes == ["-32000 Connection closed"])
    assert session.call_tool("echo", {"text": "still serving"})["content"][0]["text"] == "still serving"


def test_an_answer_with_an_error_reaches_the_tool(serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    url = serve_http(asking_server(outcomes))
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    response, (event, lines) = open_call(session)
    answer = {"jsonrpc": "2.0", "id": event["id"], "error": {"code": -32602, "message": "mode not supported"}}
    assert session.post(answer).status_code == 202
    final = rest_of_stream(lines)[-1]
    assert final["error"] == {"code": -32602, "message": "mode not supported"}
    assert outcomes == ["-32602 mode not supported"]


def test_unknown_and_duplicate_answers_are_refused(serve_http: Callable[..., str]) -> None:
    url = serve_http(asking_server([]))
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    unknown = session.post({"jsonrpc": "2.0", "id": 999, "result": {"action": "accept"}})
    assert unknown.status_code == 400
    assert unknown.json()["id"] is None and unknown.json()["error"]["code"] == -32600
    assert "No question of this session awaits an answer with id 999" in unknown.json()["error"]["message"]
    response, (event, lines) = open_call(session)
    answer = {"jsonrpc": "2.0", "id": event["id"], "result": {"action": "decline"}}
    assert session.post(answer).status_code == 202
    assert session.post(answer).status_code == 400
    assert rest_of_stream(lines)[-1]["result"]["content"][0]["text"] == "decline"


def test_an_answer_after_the_timeout_is_ignored(serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    url = serve_http(asking_server(outcomes, back_channel_timeout=0.2))
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    baseline = busy_threads()
    response, (event, lines) = open_call(session)
    messages = rest_of_stream(lines)
    assert messages[0]["method"] == "notifications/cancelled"
    assert messages[-1]["error"] == {"code": -32001, "message": "Request 'elicitation/create' timed out"}
    late = {"jsonrpc": "2.0", "id": event["id"], "result": {"action": "accept", "content": {"ok": True}}}
    assert session.post(late).status_code == 202
    assert outcomes == ["-32001 Request 'elicitation/create' timed out"]
    assert wait_for(lambda: busy_threads() <= baseline + 1)


def test_deleting_the_session_ends_its_standalone_stream_at_once(serve_http: Callable[..., str]) -> None:
    url = serve_http(asking_server([]))
    session = legacy_handshake(url)
    stream = requests.get(url, stream=True, timeout=30, headers={
        "Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
        "MCP-Protocol-Version": session.protocol_version})
    assert stream.status_code == 200
    lines = stream.iter_lines()
    assert next(lines) == b": stream open"
    started = time.monotonic()
    assert session.delete().status_code == 200
    assert [line for line in lines if line] == []
    assert time.monotonic() - started < 2


def test_an_error_answer_with_a_malformed_code_becomes_an_internal_error(serve_http: Callable[..., str]) -> None:
    outcomes: list[str] = []
    url = serve_http(asking_server(outcomes))
    session = legacy_handshake(url, capabilities={"elicitation": {}})
    response, (event, lines) = open_call(session)
    answer = {"jsonrpc": "2.0", "id": event["id"], "error": {"code": "x", "message": "odd"}}
    assert session.post(answer).status_code == 202
    assert rest_of_stream(lines)[-1]["error"] == {"code": -32603, "message": "odd"}
    assert outcomes == ["-32603 odd"]
