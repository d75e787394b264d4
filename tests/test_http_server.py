"""The server over legacy (2025-11-25) Streamable HTTP, on a real HTTP server (minimcp.httpd).

Everything goes over the wire with ``requests``: the handshake, tools/list and tools/call, every
refusal with its exact HTTP status and JSON-RPC code, and the bounded worker pool.
"""

from __future__ import annotations

import json
import math
import re
import string
import threading
from typing import Annotated, Any, Literal

import pytest
import requests
from pydantic import BaseModel, Field

from conftest import (
    BASE_HEADERS,
    LEGACY,
    TIMEOUT,
    final_message,
    initialize_params,
    legacy_handshake,
    modern_headers,
    modern_meta,
    modern_rpc,
    post,
    read_messages,
    request_message,
    rpc,
    wait_for,
)
from minimcp import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.server.middleware import LoggingMiddleware, TimingMiddleware


class Address(BaseModel):
    street: str
    zip_code: int = 0


class Weather(BaseModel):
    temperature: float
    conditions: str


def build_server(**options: Any) -> MCPServer:
    mcp = MCPServer("http-test", version="1.2.3", **options)

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def schema_probe(
        name: str,
        ctx: Context,
        count: int = 3,
        unit: Literal["c", "f"] = "c",
        level: Annotated[int, Field(ge=1, le=50, description="How loud")] = 1,
        note: str = Field(default="none", description="A free note"),
        address: Address | None = None,
    ) -> str:
        """Probe the input schema."""
        assert isinstance(ctx, Context)
        return f"{name}:{count}:{unit}:{level}:{note}:{address.street if address else '-'}"

    @mcp.tool()
    def weather(city: str) -> Weather:
        return Weather(temperature=21.5, conditions=f"sunny in {city}")

    @mcp.tool()
    def numbers(n: int) -> list[int]:
        return list(range(n))

    @mcp.tool()
    def counts(word: str) -> dict[str, int]:
        return {letter: word.count(letter) for letter in sorted(set(word))}

    @mcp.tool()
    def boom() -> str:
        raise RuntimeError("kaboom")

    @mcp.tool()
    def protocol_failure() -> str:
        raise MCPError(-32099, "custom failure", {"why": "because", "n": 7})

    return mcp


@pytest.fixture
def url(serve_http: Any) -> str:
    return serve_http(build_server())


@pytest.fixture
def session(url: str) -> Any:
    return legacy_handshake(url)


# --- initialize ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [("2025-11-25", "2025-11-25"), ("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-11-25"),
     ("2026-07-28", "2025-11-25")],
)
def test_initialize_negotiates_the_version(url: str, requested: str, negotiated: str) -> None:
    message = request_message("initialize", initialize_params(requested))
    response = post(url, message)
    assert response.status_code == 200
    answer = final_message(response, message["id"])
    result = answer["result"]
    assert result["protocolVersion"] == negotiated
    assert result["serverInfo"]["name"] == "http-test"
    assert result["serverInfo"]["version"] == "1.2.3"
    assert "tools" in result["capabilities"]
    assert "resultType" not in result  # legacy results carry no modern fields
    assert response.headers.get("Mcp-Session-Id")


def test_handshake_then_call_on_negotiated_version(url: str) -> None:
    old = legacy_handshake(url, protocol_version="2025-03-26")
    assert old.protocol_version == "2025-03-26"
    assert old.call_tool("echo", {"text": "hi"})["content"] == [{"type": "text", "text": "hi"}]


def _bits_of_entropy(token: str) -> float:
    for alphabet in (string.hexdigits.lower(), string.hexdigits.upper(),
                     string.ascii_letters + string.digits + "-_", string.ascii_letters + string.digits + "+/="):
        if set(token) <= set(alphabet):
            return len(token) * math.log2(len(set(alphabet)))
    return len(token) * math.log2(94)


def test_session_id_is_visible_ascii_and_at_least_128_bits(url: str) -> None:
    ids = {legacy_handshake(url).session_id for _ in range(8)}
    assert len(ids) == 8  # fresh for every initialize
    for session_id in ids:
        assert re.fullmatch(r"[\x21-\x7e]+", session_id), session_id
        assert _bits_of_entropy(session_id) >= 128, session_id


def test_ping_answers_exactly_an_empty_object(session: Any) -> None:
    answer = session.rpc("ping")
    assert answer["result"] == {}
    assert answer["jsonrpc"] == "2.0"


# --- tools/list -------------------------------------------------------------------------------------------
def _tools(session: Any) -> dict[str, dict[str, Any]]:
    result = session.rpc("tools/list")["result"]
    return {tool["name"]: tool for tool in result["tools"]}


def test_input_schema_from_type_hints(session: Any) -> None:
    tool = _tools(session)["schema_probe"]
    assert tool["description"] == "Probe the input schema."
    assert tool["inputSchema"] == {
        "type": "object",
        "title": "schema_probeArguments",
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "count": {"default": 3, "title": "Count", "type": "integer"},
            "unit": {"default": "c", "enum": ["c", "f"], "title": "Unit", "type": "string"},
            "level": {"default": 1, "description": "How loud", "maximum": 50, "minimum": 1, "title": "Level",
                      "type": "integer"},
            "note": {"default": "none", "description": "A free note", "title": "Note", "type": "string"},
            "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        },
        "required": ["name"],
        "$defs": {
            "Address": {
                "title": "Address",
                "type": "object",
                "properties": {"street": {"title": "Street", "type": "string"},
                               "zip_code": {"default": 0, "title": "Zip Code", "type": "integer"}},
                "required": ["street"],
            }
        },
    }
    assert "ctx" not in tool["inputSchema"]["properties"]
    assert "$schema" not in tool["inputSchema"]


def test_output_schemas(session: Any) -> None:
    tools = _tools(session)
    assert tools["echo"]["outputSchema"] == {
        "type": "object", "title": "echoOutput", "properties": {"result": {"title": "Result", "type": "string"}},
        "required": ["result"],
    }
    assert tools["weather"]["outputSchema"] == {
        "type": "object", "title": "Weather",
        "properties": {"temperature": {"title": "Temperature", "type": "number"},
                       "conditions": {"title": "Conditions", "type": "string"}},
        "required": ["temperature", "conditions"],
    }
    assert tools["numbers"]["outputSchema"] == {
        "type": "object", "title": "numbersOutput",
        "properties": {"result": {"title": "Result", "type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }
    counts = tools["counts"]["outputSchema"]
    assert counts["type"] == "object"
    assert counts["additionalProperties"] == {"type": "integer"}
    assert "result" not in counts.get("properties", {})


@pytest.mark.parametrize(
    ("name", "arguments", "content", "structured"),
    [
        ("echo", {"text": "hello"}, [{"type": "text", "text": "hello"}], {"result": "hello"}),
        ("weather", {"city": "Oslo"},
         [{"type": "text", "text": '{\n  "temperature": 21.5,\n  "conditions": "sunny in Oslo"\n}'}],
         {"temperature": 21.5, "conditions": "sunny in Oslo"}),
        ("numbers", {"n": 3}, [{"type": "text", "text": "0"}, {"type": "text", "text": "1"},
                               {"type": "text", "text": "2"}], {"result": [0, 1, 2]}),
        ("counts", {"word": "abba"}, [{"type": "text", "text": '{\n  "a": 2,\n  "b": 2\n}'}], {"a": 2, "b": 2}),
    ],
)
def test_structured_content(session: Any, name: str, arguments: dict[str, Any], content: list[Any],
                            structured: Any) -> None:
    result = session.call_tool(name, arguments)
    assert result["isError"] is False
    assert result["content"] == content
    assert result["structuredContent"] == structured


def test_call_uses_defaults_and_nested_model(session: Any) -> None:
    result = session.call_tool("schema_probe", {"name": "n", "unit": "f", "address": {"street": "Main"}})
    assert result["content"][0]["text"] == "n:3:f:1:none:Main"


# --- pagination -------------------------------------------------------------------------------------------
def test_tools_list_pagination(serve_http: Any) -> None:
    mcp = MCPServer("many")
    for i in range(130):
        mcp.add_tool(lambda x=i: x, name=f"tool_{i:03d}")
    session = legacy_handshake(serve_http(mcp))
    first = session.rpc("tools/list")["result"]
    assert len(first["tools"]) == 100
    cursor = first["nextCursor"]
    assert isinstance(cursor, str) and cursor
    second = session.rpc("tools/list", {"cursor": cursor})["result"]
    assert "nextCursor" not in second
    names = [t["name"] for t in first["tools"] + second["tools"]]
    assert names == [f"tool_{i:03d}" for i in range(130)]

    bad = session.rpc("tools/list", {"cursor": "not-a-cursor!"})
    assert bad["error"]["code"] == -32602
    assert "result" not in bad
    assert session.rpc("tools/list", {"cursor": cursor})["result"]["tools"] == second["tools"]


# --- tools/call outcomes ------------------------------------------------------------------------------------
def test_call_success(session: Any) -> None:
    result = session.call_tool("echo", {"text": "wire"})
    assert result == {"content": [{"type": "text", "text": "wire"}], "structuredContent": {"result": "wire"},
                      "isError": False}


def test_a_plain_return_value_of_another_type_is_still_checked_against_its_annotation(serve_http: Any) -> None:
    """A ``str``/``int``/``bool`` value of exactly the annotated type is its own structured output;
    any other (a subclass, a number for ``str``, a string for ``int``) still goes through validation."""
    mcp = MCPServer("plain")

    class Text(str):
        pass

    @mcp.tool()
    def text(kind: str) -> str:
        return {"str": "s", "sub": Text("t"), "int": 5}[kind]  # type: ignore[return-value]

    @mcp.tool()
    def number(kind: str) -> int:
        return {"int": 7, "bool": True, "str": "8", "word": "eight"}[kind]  # type: ignore[return-value]

    session = legacy_handshake(serve_http(mcp))
    assert session.call_tool("text", {"kind": "str"})["structuredContent"] == {"result": "s"}
    assert session.call_tool("text", {"kind": "sub"})["structuredContent"] == {"result": "t"}
    assert session.call_tool("text", {"kind": "int"})["isError"] is True
    assert session.call_tool("number", {"kind": "int"})["structuredContent"] == {"result": 7}
    assert session.call_tool("number", {"kind": "str"})["structuredContent"] == {"result": 8}
    assert session.call_tool("number", {"kind": "word"})["isError"] is True


def test_invalid_arguments_are_a_tool_error(session: Any) -> None:
    result = session.call_tool("schema_probe", {"name": "n", "level": 99})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("Error executing tool schema_probe: ")
    assert "Input should be less than or equal to 50" in text
    missing = session.call_tool("echo", {})
    assert missing["isError"] is True and "Field required" in missing["content"][0]["text"]


def test_raising_tool_is_a_tool_error(session: Any) -> None:
    result = session.call_tool("boom")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Error executing tool boom"}]  # "kaboom" is the log's
    assert result.get("structuredContent") is None


def test_unknown_tool_is_a_tool_error(session: Any) -> None:
    result = session.call_tool("x")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Unknown tool: x"}]


def test_mcp_error_in_a_tool_crosses_the_wire_verbatim(session: Any) -> None:
    answer = session.rpc("tools/call", {"name": "protocol_failure", "arguments": {}})
    assert "result" not in answer
    assert answer["error"] == {"code": -32099, "message": "custom failure", "data": {"why": "because", "n": 7}}


# --- refusals ------------------------------------------------------------------------------------------------
def _raw_post(url: str, data: bytes | str, headers: dict[str, str]) -> requests.Response:
    return requests.post(url, data=data, headers=headers, timeout=TIMEOUT)


def _assert_still_serving(session: Any) -> None:
    assert session.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"


def test_malformed_json(url: str, session: Any) -> None:
    response = post(url, b"{not json", raw=True, session_id=session.session_id, protocol_version=LEGACY)
    assert response.status_code == 400
    body = response.json()
    assert body["id"] is None and body["error"]["code"] == -32700
    _assert_still_serving(session)


def test_json_array_body(url: str, session: Any) -> None:
    batch = [request_message("ping"), request_message("ping")]
    response = post(url, batch, session_id=session.session_id, protocol_version=LEGACY)
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == -32600 and body["id"] is None
    _assert_still_serving(session)


def test_missing_jsonrpc_member(url: str, session: Any) -> None:
    response = post(url, {"id": 5, "method": "ping"}, session_id=session.session_id, protocol_version=LEGACY)
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == -32600
    assert body["id"] == 5  # readable id is echoed
    _assert_still_serving(session)


def test_unknown_method(session: Any) -> None:
    answer = session.rpc("tools/frobnicate")
    assert answer["error"]["code"] == -32601
    assert "result" not in answer
    _assert_still_serving(session)


def test_wrong_accept(url: str, session: Any) -> None:
    headers = {**BASE_HEADERS, "Accept": "application/json", "Mcp-Session-Id": session.session_id}
    response = _raw_post(url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', headers)
    assert response.status_code == 406
    headers["Accept"] = "text/html"
    assert _raw_post(url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', headers).status_code == 406
    _assert_still_serving(session)


def test_wrong_content_type(url: str, session: Any) -> None:
    headers = {**BASE_HEADERS, "Content-Type": "text/plain", "Mcp-Session-Id": session.session_id}
    response = _raw_post(url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', headers)
    assert response.status_code == 415
    _assert_still_serving(session)


def test_missing_session_id(url: str, session: Any) -> None:
    response = post(url, request_message("ping"), protocol_version=LEGACY)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert response.json()["id"] is None
    _assert_still_serving(session)


def test_unknown_session(url: str, session: Any) -> None:
    response = post(url, request_message("ping"), session_id="f" * 32, protocol_version=LEGACY)
    assert response.status_code == 404
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}
    _assert_still_serving(session)


def test_delete_then_reuse(url: str, session: Any) -> None:
    other = legacy_handshake(url)
    assert other.delete().status_code == 200
    response = other.post(request_message("tools/list"))
    assert response.status_code == 404
    assert response.json()["error"] == {"code": -32600, "message": "Session not found"}
    assert other.delete().status_code == 404
    _assert_still_serving(session)


def test_foreign_origin(url: str, session: Any) -> None:
    response = post(url, request_message("ping"), session_id=session.session_id, protocol_version=LEGACY,
                    headers={"Origin": "http://evil.example.com"})
    assert response.status_code == 403
    assert "Invalid Origin header" in response.text
    local = post(url, request_message("ping"), session_id=session.session_id, protocol_version=LEGACY,
                 headers={"Origin": f"http://localhost:{url.split(':')[2].split('/')[0]}"})
    assert local.status_code == 200
    _assert_still_serving(session)


def test_foreign_host(url: str, session: Any) -> None:
    response = post(url, request_message("ping"), session_id=session.session_id, protocol_version=LEGACY,
                    headers={"Host": "evil.example.com"})
    assert response.status_code == 421
    assert "Invalid Host header" in response.text
    _assert_still_serving(session)


def test_body_over_the_limit(serve_http: Any) -> None:
    url = serve_http(build_server(), max_request_body_size=2048)
    session = legacy_handshake(url)
    big = request_message("tools/call", {"name": "echo", "arguments": {"text": "x" * 4096}})
    response = session.post(big)
    assert response.status_code == 413
    just_under = session.call_tool("echo", {"text": "y" * 1000})
    assert just_under["content"][0]["text"] == "y" * 1000


def test_chunked_body_over_the_limit(serve_http: Any) -> None:
    """Without a Content-Length the limit is enforced while reading."""
    import json

    url = serve_http(build_server(), max_request_body_size=2048)
    session = legacy_handshake(url)
    body = json.dumps(request_message("tools/call", {"name": "echo", "arguments": {"text": "x" * 8192}})).encode()
    chunks = (body[i:i + 1024] for i in range(0, len(body), 1024))
    headers = {**BASE_HEADERS, "Mcp-Session-Id": session.session_id, "MCP-Protocol-Version": LEGACY}
    response = requests.post(url, data=chunks, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 413
    assert session.call_tool("echo", {"text": "z"})["content"][0]["text"] == "z"


def test_a_request_between_initialize_and_initialized_is_served(url: str) -> None:
    """The specification asks a client to wait for the ``initialize`` answer only; the official SDK
    serves what comes before ``notifications/initialized``, and so does this server."""
    message = request_message("initialize", initialize_params())
    response = post(url, message)
    session_id = response.headers["Mcp-Session-Id"]
    early = rpc(url, "tools/list", session_id=session_id, protocol_version=LEGACY)
    assert "echo" in [tool["name"] for tool in early["result"]["tools"]], early
    assert rpc(url, "ping", session_id=session_id, protocol_version=LEGACY)["result"] == {}


# --- worker pool ---------------------------------------------------------------------------------------------
def test_worker_pool_refuses_when_busy_and_recovers(serve_http: Any) -> None:
    mcp = MCPServer("pool", max_workers=1, worker_wait_timeout=0.2, max_calls_per_principal=8)  # one caller fills it
    started = threading.Event()
    release = threading.Event()

    @mcp.tool()
    def block() -> str:
        started.set()
        assert release.wait(20)
        return "released"

    @mcp.tool()
    def quick() -> str:
        return "quick"

    session = legacy_handshake(serve_http(mcp))
    first: dict[str, Any] = {}
    blocker = threading.Thread(target=lambda: first.update(session.rpc("tools/call", {"name": "block",
                                                                                          "arguments": {}})))
    blocker.start()
    try:
        assert started.wait(10)
        refused = session.rpc("tools/call", {"name": "quick", "arguments": {}})
        assert refused["error"] == {"code": -32603,
                                    "message": "Server busy: no worker thread became free within 0.2s"}
    finally:
        release.set()
        blocker.join(20)
    assert first["result"]["content"] == [{"type": "text", "text": "released"}]
    assert session.call_tool("quick")["content"] == [{"type": "text", "text": "quick"}]
    assert session.call_tool("block")["content"] == [{"type": "text", "text": "released"}]


def _worker_threads(besides: set[threading.Thread] | None = None) -> set[threading.Thread]:
    """Live pool threads, other than ``besides`` (those of other servers, which come and go)."""
    return {t for t in threading.enumerate() if t.name == "minimcp-worker"} - (besides or set())


def test_worker_pool_reuses_threads_never_exceeds_its_size_and_lets_idle_ones_go(serve_http: Any) -> None:
    mcp = MCPServer("pool", max_workers=3, max_calls_per_principal=8)  # one caller may fill it
    mcp.pool.idle_timeout = 0.3
    inside = threading.Semaphore(0)
    release = threading.Event()

    @mcp.tool()
    def hold(n: int, ctx: Context) -> int:
        inside.release()
        assert release.wait(20)
        return n

    @mcp.tool()
    def echo(text: str, ctx: Context) -> str:
        return text

    session = legacy_handshake(serve_http(mcp))  # a legacy call that may ask back runs on a worker
    others = _worker_threads()
    for i in range(20):  # one caller at a time: one worker serves them all
        assert session.call_tool("echo", {"text": str(i)})["structuredContent"] == {"result": str(i)}
    assert len(_worker_threads(others)) == 1

    answers: list[Any] = []
    callers = [threading.Thread(target=lambda n=n: answers.append(session.rpc(
        "tools/call", {"name": "hold", "arguments": {"n": n}}))) for n in range(5)]
    for caller in callers:
        caller.start()
    try:
        for _ in range(3):
            assert inside.acquire(timeout=10)
        assert not inside.acquire(timeout=0.3)  # the 4th and 5th call wait for a free worker
        assert len(_worker_threads(others)) == 3
    finally:
        release.set()
        for caller in callers:
            caller.join(20)
    assert sorted(a["result"]["structuredContent"]["result"] for a in answers) == [0, 1, 2, 3, 4]
    assert wait_for(lambda: not _worker_threads(others)), _worker_threads(others)
    assert session.call_tool("echo", {"text": "again"})["structuredContent"] == {"result": "again"}


def test_closing_the_app_ends_idle_workers(serve_http: Any) -> None:
    mcp = MCPServer("pool")
    others = _worker_threads()

    @mcp.tool()
    def echo(text: str, ctx: Context) -> str:
        return text

    session = legacy_handshake(serve_http(mcp))
    assert session.call_tool("echo", {"text": "x"})["content"]
    assert len(_worker_threads(others)) == 1
    mcp.close()
    assert wait_for(lambda: not _worker_threads(others)), _worker_threads(others)


def test_a_quiet_2026_call_runs_on_the_thread_that_received_it_within_the_pool_bound(serve_http: Any) -> None:
    """A 2026-07-28 call that asked for no progress and no logs has nothing to stream, so it runs on
    the HTTP thread that received it instead of being handed to a worker; it still takes one of
    the pool's ``max_workers`` slots while it runs, shared with the calls that do go to workers."""
    mcp = MCPServer("here", max_workers=1, worker_wait_timeout=0.2, max_calls_per_principal=8)  # one caller fills it
    started = threading.Event()
    release = threading.Event()

    @mcp.tool()
    def where() -> str:
        return threading.current_thread().name

    @mcp.tool()
    def block() -> str:
        started.set()
        assert release.wait(20)
        return "released"

    url = serve_http(mcp)
    others = _worker_threads()
    answer = modern_rpc(url, "tools/call", {"name": "where", "arguments": {}})
    assert answer["result"]["content"][0]["text"] != "minimcp-worker"
    assert not _worker_threads(others)

    first: dict[str, Any] = {}
    blocker = threading.Thread(target=lambda: first.update(modern_rpc(url, "tools/call", {"name": "block",
                                                                                          "arguments": {}})))
    blocker.start()
    try:
        assert started.wait(10)
        busy = {"code": -32603, "message": "Server busy: no worker thread became free within 0.2s"}
        assert modern_rpc(url, "tools/call", {"name": "where", "arguments": {}})["error"] == busy
        assert legacy_handshake(url).rpc("tools/call", {"name": "where", "arguments": {}})["error"] == busy
    finally:
        release.set()
        blocker.join(20)
    assert first["result"]["content"] == [{"type": "text", "text": "released"}]
    assert modern_rpc(url, "tools/call", {"name": "where", "arguments": {}})["result"]["content"]


def test_what_a_quiet_2026_call_sends_travels_before_its_answer(serve_http: Any) -> None:
    """A quiet 2026-07-28 call's answer is written by the thread that ran it, as one JSON body;
    what the call sent on its own first (a vendor notification) comes before the answer on a stream."""
    mcp = MCPServer("here")

    @mcp.tool()
    def announce(ctx: Context, count: int) -> str:
        for n in range(count):
            ctx.session.send_notification("acme/step", ctx.request_id, {"n": n})
        return threading.current_thread().name

    url = serve_http(mcp)
    others = _worker_threads()
    for count in (0, 2):
        params = {"name": "announce", "arguments": {"count": count}}
        message = request_message("tools/call", {**params, "_meta": modern_meta()}, id=count)
        response = post(url, message, headers=modern_headers("tools/call", params))
        messages = read_messages(response)
        streamed = response.headers["Content-Type"].startswith("text/event-stream")
        assert streamed == (count > 0), response.headers
        assert [m.get("method") for m in messages] == ["acme/step"] * count + [None]
        assert [m["params"]["n"] for m in messages[:count]] == list(range(count))
        answer = messages[-1]
        assert answer["id"] == count and answer["result"]["content"][0]["text"] != "minimcp-worker"
    assert not _worker_threads(others)


def test_a_legacy_call_that_can_send_nothing_runs_on_the_thread_that_received_it(serve_http: Any) -> None:
    """A legacy call may ask back on its stream, so it runs on a worker while the HTTP thread streams;
    a tool whose call can send nothing (no ``Context``, no resolvers, not a task, no component filter,
    only middleware that says it sends nothing) has nothing to stream, so it runs where the POST arrived."""
    def build(**options: Any) -> MCPServer:
        mcp = MCPServer("here", **options)

        @mcp.tool()
        def where() -> str:
            return threading.current_thread().name

        @mcp.tool()
        def where_with(ctx: Context) -> str:
            return threading.current_thread().name

        return mcp

    def thread_of(session: Any, tool: str) -> str:
        return session.call_tool(tool)["content"][0]["text"]

    session = legacy_handshake(serve_http(build()))
    assert thread_of(session, "where") != "minimcp-worker"
    assert thread_of(session, "where_with") == "minimcp-worker"
    # What could send in the tool's place puts it back on a worker: a middleware, a component filter.
    passing = lambda ctx, call_next: call_next(ctx)  # noqa: E731
    assert thread_of(legacy_handshake(serve_http(build(middleware=[passing]))), "where") == "minimcp-worker"
    filtered = build(component_filter=lambda ctx, component: True)
    assert thread_of(legacy_handshake(serve_http(filtered)), "where") == "minimcp-worker"
    # Middleware whose class promises to send nothing (the built-in ones, or a user's) keeps it here.

    class Observing:
        sends_nothing = True

        def __call__(self, ctx: Any, call_next: Any) -> Any:
            return call_next(ctx)

    observed = build(middleware=[TimingMiddleware(), LoggingMiddleware(), Observing()])
    assert thread_of(legacy_handshake(serve_http(observed)), "where") != "minimcp-worker"


def test_a_2026_call_that_asked_for_progress_streams_it_while_it_runs(serve_http: Any) -> None:
    """With a progress token the call runs on a worker, so its progress reaches the client before
    the call ends: the tool waits until the client has seen the first notification."""
    mcp = MCPServer("progress")
    seen_first = threading.Event()

    @mcp.tool()
    def slow(ctx: Context) -> str:
        ctx.report_progress(1, 2, "half")
        assert seen_first.wait(20), "the progress notification did not reach the client while the call ran"
        return "finished"

    params = {"name": "slow", "arguments": {}}
    message = request_message("tools/call", {**params, "_meta": modern_meta(progressToken="p1")})
    response = requests.post(serve_http(mcp), json=message, stream=True, timeout=TIMEOUT,
                             headers={**BASE_HEADERS, **modern_headers("tools/call", params)})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    lines = response.iter_lines()
    first = next(json.loads(line[5:]) for line in lines if line.startswith(b"data:") and line[5:].strip())
    assert first["method"] == "notifications/progress" and first["params"]["progressToken"] == "p1"
    seen_first.set()
    rest = [json.loads(line[5:]) for line in lines if line.startswith(b"data:") and line[5:].strip()]
    assert rest[-1]["id"] == message["id"]
    assert rest[-1]["result"]["content"] == [{"type": "text", "text": "finished"}]


# --- registration errors ---------------------------------------------------------------------------------------
def test_async_tool_is_refused_at_registration() -> None:
    mcp = MCPServer("x")
    with pytest.raises(TypeError) as info:
        @mcp.tool()
        async def book_table(date: str) -> str:
            return date
    assert str(info.value) == ("minimcp runs plain functions only: 'book_table' is declared 'async def'; "
                               "delete async/await when porting")
    assert mcp.list_tools() == []


def test_tool_decorator_without_parentheses() -> None:
    mcp = MCPServer("x")
    with pytest.raises(TypeError) as info:
        @mcp.tool
        def f() -> str:
            return ""
    assert str(info.value) == ("The @tool decorator was used incorrectly. Did you forget to call it? "
                               "Use @tool() instead of @tool")


def test_lambda_needs_a_name() -> None:
    mcp = MCPServer("x")
    with pytest.raises(ValueError, match="^You must provide a name for lambda functions$"):
        mcp.add_tool(lambda: 1)
    mcp.add_tool(lambda: 1, name="one")
    assert [t.name for t in mcp.list_tools()] == ["one"]


def test_progress_turns_the_answer_into_sse(serve_http: Any) -> None:
    """A notification before the result makes the POST answer an SSE stream ending with the result."""
    mcp = MCPServer("progress")

    @mcp.tool()
    def slow(ctx: Context) -> str:
        ctx.report_progress(1, 2, "half")
        ctx.report_progress(2, 2, "done")
        return "finished"

    session = legacy_handshake(serve_http(mcp))
    message = request_message("tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p1"}})
    response = session.post(message)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    messages = read_messages(response)
    assert [m.get("method") for m in messages[:-1]] == ["notifications/progress"] * 2
    assert messages[0]["params"] == {"progressToken": "p1", "progress": 1, "total": 2, "message": "half"}
    assert messages[-1]["id"] == message["id"]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "finished"}]


def test_a_handler_reads_the_request_headers_by_any_case(serve_http: Any) -> None:
    """``ctx.headers``: every field by case-insensitive name, iterated in lower case; CGI's empty
    ``CONTENT_TYPE``/``CONTENT_LENGTH`` (and an absent field) read as not sent."""
    mcp = MCPServer("headers")

    @mcp.tool()
    def headers(ctx: Context) -> dict[str, Any]:
        fields = ctx.headers
        assert fields is not None
        return {"names": sorted(fields), "length": len(fields), "items": dict(fields.items()),
                "x": [fields.get("X-Custom"), fields.get("x-custom"), fields.get("X-CUSTOM")],
                "type": fields["Content-Type"], "absent": [fields.get("X-Absent"), fields.get("X-Absent", "-"),
                                                          "x-absent" in fields, "X-Custom" in fields, 7 in fields]}

    answer = modern_rpc(serve_http(mcp), "tools/call", {"name": "headers", "arguments": {}},
                        headers={"X-Custom": "yes"})
    seen = answer["result"]["structuredContent"]
    assert {"x-custom", "content-type", "content-length", "mcp-method", "mcp-name", "host", "accept"} <= \
        set(seen["names"])
    assert seen["names"] == sorted(seen["items"]) and seen["length"] == len(seen["names"])
    assert seen["x"] == ["yes", "yes", "yes"]
    assert seen["type"] == "application/json"
    assert seen["absent"] == [None, "-", False, True, False]


def test_header_names_a_client_invents_grow_nothing_past_a_limit(serve_http: Any) -> None:
    """Reading a request's headers by name costs no table entry for the names a client sends; a
    handler that walks them all fills the table of environ keys only to its limit, and a name first
    seen past it is still read."""
    from minimcp.server.edges import wsgi

    mcp = MCPServer("headers")

    @mcp.tool()
    def walk(name: str, ctx: Context) -> str:
        fields = ctx.headers
        assert fields is not None
        return f"{len(list(fields))} {fields.get(name)} {name.lower() in set(fields)}"

    endpoint = serve_http(mcp)
    for i in range(wsgi._Table.LIMIT + 20):
        answer = modern_rpc(endpoint, "tools/call", {"name": "walk", "arguments": {"name": f"X-Invented-{i}"}},
                            headers={f"X-Invented-{i}": str(i)})
        count, value, listed = answer["result"]["content"][0]["text"].split()
        assert (value, listed) == (str(i), "True")
    # Served in this process: the tables filled to their limit (one racing thread may add one more).
    assert wsgi._Table.LIMIT <= len(wsgi._field_names) <= wsgi._Table.LIMIT + 1
    assert wsgi._Table.LIMIT <= len(wsgi._environ_keys) <= wsgi._Table.LIMIT + 1


def test_a_content_type_a_server_also_gives_as_http_content_type_is_one_field() -> None:
    """PEP 3333 keeps Content-Type and Content-Length in their CGI keys; a server that adds
    ``HTTP_CONTENT_TYPE`` too does not make the view name the field twice, and what it reads is the
    CGI key's value (empty there: not sent)."""
    from minimcp.server.wsgi import EnvironHeaders

    headers = EnvironHeaders({"CONTENT_TYPE": "application/json", "HTTP_CONTENT_TYPE": "text/plain",
                              "CONTENT_LENGTH": "", "HTTP_CONTENT_LENGTH": "9", "HTTP_HOST": "h"})
    assert sorted(headers) == ["content-type", "host"] and len(headers) == 2
    assert dict(headers.items()) == {"content-type": "application/json", "host": "h"}
    assert headers.get("Content-Length") is None and "content-length" not in headers
