"""Era negotiation and the 2026-07-28 retry loop, against a scripted server behind a tiny transport.

The fake server answers each request from a script keyed by method; everything the client sends
is recorded, so the tests read like wire traces.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext, InputRequiredRoundsExceededError
from minimcp.types import (
    DiscoverResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ServerCapabilities,
)

Answer = dict[str, Any]


class ScriptedServer:
    """A Transport whose far end is a dict of method -> list of answers (results or errors)."""

    def __init__(self, script: dict[str, list[Answer]]) -> None:
        self.script = {method: list(answers) for method, answers in script.items()}
        self.sent: list[tuple[dict[str, Any], dict[str, str]]] = []

    def connect(self, handler: Callable[[dict[str, Any]], None]) -> None:
        self.handler = handler

    def request(self, message: dict[str, Any], *, headers: Any = None, timeout: float | None = None) -> dict[str, Any]:
        self.sent.append((message, dict(headers or {})))
        answers = self.script.get(message["method"])
        if not answers:
            return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        return {"jsonrpc": "2.0", "id": message["id"], **answer}

    def send(self, message: dict[str, Any], *, headers: Any = None) -> None:
        self.sent.append((message, dict(headers or {})))

    def listen(self, *, headers: Any = None) -> None:
        pass

    def close(self) -> None:
        pass

    def methods(self) -> list[str]:
        return [message["method"] for message, _ in self.sent if "method" in message]

    def calls(self, method: str = "tools/call") -> list[dict[str, Any]]:
        return [message for message, _ in self.sent if message.get("method") == method]


DISCOVER = {"result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                       "ttlMs": 0, "cacheScope": "public",
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}}}
INITIALIZE = {"result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}}
DONE = {"result": {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}}
ASK_NAME = {"method": "elicitation/create", "params": {"mode": "form", "message": "Name?",
                                                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}


def asking(requests: dict[str, Any] | None, state: str | None = None) -> Answer:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return {"result": result}


def answer_octocat(context: ClientRequestContext, params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "octocat"})


# --- negotiation -----------------------------------------------------------------------------


def test_auto_lands_on_2026_with_one_discover_probe() -> None:
    server = ScriptedServer({"server/discover": [DISCOVER]})
    with Client(server) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_info is not None and client.server_info.name == "fake"
    assert server.methods() == ["server/discover"]


@pytest.mark.parametrize(
    "probe_answer",
    [
        {"error": {"code": -32601, "message": "Method not found"}},
        {"error": {"code": -32602, "message": "Invalid params"}},
        {"result": {}},
    ],
)
def test_auto_falls_back_to_the_handshake(probe_answer: Answer) -> None:
    server = ScriptedServer({"server/discover": [probe_answer], "initialize": [INITIALIZE]})
    with Client(server) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None and client.server_info.name == "old"
    assert server.methods() == ["server/discover", "initialize", "notifications/initialized"]
    initialize = server.calls("initialize")[0]
    assert "_meta" not in initialize["params"]


def test_auto_refuses_a_server_that_names_only_modern_versions_we_lack() -> None:
    refusal = {"error": {"code": -32022, "message": "Unsupported", "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}}
    server = ScriptedServer({"server/discover": [refusal]})
    with pytest.raises(MCPError) as failure:
        Client(server).__enter__()
    assert failure.value.code == -32022
    assert server.methods() == ["server/discover"]


def test_pinned_mode_sends_nothing_and_knows_nothing() -> None:
    server = ScriptedServer({})
    with Client(server, mode="2026-07-28") as client:
        assert client.protocol_version == "2026-07-28"
        # As officially: an empty capability set stands in until a discover is given.
        assert client.server_info is None and client.server_capabilities == ServerCapabilities()
    assert server.sent == []


def test_pinned_mode_takes_identity_from_prior_discover() -> None:
    saved = DiscoverResult.model_validate(DISCOVER["result"])
    with Client(ScriptedServer({}), mode="2026-07-28", prior_discover=saved) as client:
        assert client.server_info is not None and client.server_info.name == "fake"
        assert client.server_capabilities is not None and client.server_capabilities.tools is not None


def test_entering_twice_is_refused() -> None:
    client = Client(ScriptedServer({}), mode="2026-07-28")
    with client:
        with pytest.raises(RuntimeError, match="^Client is already entered; cannot reenter$"):
            client.__enter__()


def test_modern_requests_carry_meta_and_headers() -> None:
    server = ScriptedServer({"tools/call": [DONE]})
    with Client(server, mode="2026-07-28", elicitation_callback=answer_octocat) as client:
        client.call_tool("greet", {"who": "x"})
    message, headers = server.sent[0]
    meta = message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {
        "elicitation": {"form": {}, "url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "minimcp"
    assert headers == {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "greet"}


def test_unsupported_version_is_retried_once_with_a_listed_version() -> None:
    refusal = {"error": {"code": -32022, "message": "Unsupported", "data": {"supported": ["2026-07-28"], "requested": "x"}}}
    server = ScriptedServer({"tools/list": [refusal, {"result": {"tools": []}}]})
    with Client(server, mode="2026-07-28") as client:
        client.list_tools()
    first, second = server.calls("tools/list")
    assert first["id"] != second["id"]


# --- the input_required loop -----------------------------------------------------------------


def test_loop_answers_and_echoes_state_byte_for_byte_with_new_ids() -> None:
    server = ScriptedServer({"tools/call": [asking({"user_name": ASK_NAME}, "s+/=1 "), DONE]})
    with Client(server, mode="2026-07-28", elicitation_callback=answer_octocat) as client:
        result = client.call_tool("t", {"a": 1})
    assert result.content[0].text == "done"
    first, retry = server.calls()
    assert first["id"] != retry["id"]
    assert "requestState" not in first["params"] and "inputResponses" not in first["params"]
    assert retry["params"]["requestState"] == "s+/=1 "
    assert retry["params"]["inputResponses"] == {"user_name": {"action": "accept", "content": {"name": "octocat"}}}
    assert retry["params"]["arguments"] == {"a": 1} and retry["params"]["name"] == "t"


def test_no_state_is_sent_when_the_server_sent_none() -> None:
    server = ScriptedServer({"tools/call": [asking({"k": ASK_NAME}), DONE]})
    with Client(server, mode="2026-07-28", elicitation_callback=answer_octocat) as client:
        client.call_tool("t")
    assert "requestState" not in server.calls()[1]["params"]


def test_callback_sees_the_input_request_key_as_request_id() -> None:
    seen: list[Any] = []

    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        seen.append((context.request_id, params.message))
        return ElicitResult(action="decline")

    server = ScriptedServer({"tools/call": [asking({"user_name": ASK_NAME}, "s"), DONE]})
    with Client(server, mode="2026-07-28", elicitation_callback=callback) as client:
        client.call_tool("t")
    assert seen == [("user_name", "Name?")]


def test_rounds_beyond_the_limit_raise() -> None:
    server = ScriptedServer({"tools/call": [asking({"k": ASK_NAME}, "s")]})
    with Client(server, mode="2026-07-28", elicitation_callback=answer_octocat, input_required_max_rounds=2) as client:
        with pytest.raises(InputRequiredRoundsExceededError) as failure:
            client.call_tool("t")
    assert str(failure.value) == (
        "Server returned InputRequiredResult for more than 2 rounds; raise input_required_max_rounds on the Client, "
        "or use client.session.call_tool(..., allow_input_required=True) to drive the loop manually."
    )
    assert isinstance(failure.value, RuntimeError)
    assert len(server.calls()) == 3


def test_without_a_callback_the_loop_raises_elicitation_not_supported() -> None:
    server = ScriptedServer({"tools/call": [asking({"k": ASK_NAME}, "s"), DONE]})
    with Client(server, mode="2026-07-28") as client:
        with pytest.raises(MCPError) as failure:
            client.call_tool("t")
    assert (failure.value.code, str(failure.value)) == (-32600, "Elicitation not supported")
    assert len(server.calls()) == 1


def test_callback_error_data_aborts_the_loop() -> None:
    def refuse(context: ClientRequestContext, params: Any) -> ErrorData:
        return ErrorData(code=-1, message="no thanks")

    server = ScriptedServer({"tools/call": [asking({"k": ASK_NAME}, "s"), DONE]})
    with Client(server, mode="2026-07-28", elicitation_callback=refuse) as client:
        with pytest.raises(MCPError, match="^no thanks$"):
            client.call_tool("t")


def test_callback_exception_propagates_unchanged_on_2026() -> None:
    def explode(context: ClientRequestContext, params: Any) -> ElicitResult:
        raise KeyError("boom")

    server = ScriptedServer({"tools/call": [asking({"k": ASK_NAME}, "s"), DONE]})
    with Client(server, mode="2026-07-28", elicitation_callback=explode) as client:
        with pytest.raises(KeyError):
            client.call_tool("t")


def test_state_only_rounds_back_off() -> None:
    server = ScriptedServer({"tools/call": [asking(None, "a"), asking(None, "b"), asking(None, "c"), DONE]})
    started = time.monotonic()
    with Client(server, mode="2026-07-28") as client:
        client.call_tool("t")
    assert time.monotonic() - started >= 0.05 + 0.1 + 0.2 - 0.01
    assert [c["params"].get("requestState") for c in server.calls()] == [None, "a", "b", "c"]


def test_session_returns_the_round_when_asked_and_refuses_otherwise() -> None:
    server = ScriptedServer({"tools/call": [asking({"k": ASK_NAME}, "s")]})
    with Client(server, mode="2026-07-28") as client:
        result = client.session.call_tool("t", allow_input_required=True)
        assert isinstance(result, InputRequiredResult) and result.request_state == "s"
        with pytest.raises(RuntimeError) as refused:
            client.session.call_tool("t")
    assert str(refused.value) == (
        "Server returned InputRequiredResult; pass allow_input_required=True to receive it and retry "
        "call_tool(..., input_responses=..., request_state=result.request_state)."
    )


def test_seeded_first_leg_and_prompt_loop() -> None:
    prompt_done = {"result": {"resultType": "complete", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}}
    server = ScriptedServer({"prompts/get": [asking({"k": ASK_NAME}, "s2"), prompt_done]})
    with Client(server, mode="2026-07-28", elicitation_callback=answer_octocat) as client:
        result = client.get_prompt("p", {"x": "1"}, input_responses={"old": ElicitResult(action="cancel")}, request_state="s1")
    assert result.messages[0].content.text == "hi"
    first, retry = server.calls("prompts/get")
    assert first["params"]["requestState"] == "s1"
    assert first["params"]["inputResponses"] == {"old": {"action": "cancel"}}
    assert retry["params"]["requestState"] == "s2" and list(retry["params"]["inputResponses"]) == ["k"]


def test_missing_result_type_is_complete() -> None:
    server = ScriptedServer({"tools/call": [{"result": {"content": []}}]})
    with Client(server, mode="2026-07-28") as client:
        assert client.call_tool("t").is_error is False
    assert len(server.calls()) == 1


def test_output_schema_requires_structured_content() -> None:
    tools = {"result": {"tools": [{"name": "t", "inputSchema": {"type": "object"},
                                   "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}]}}
    server = ScriptedServer({"tools/list": [tools], "tools/call": [{"result": {"content": []}}]})
    with Client(server, mode="2026-07-28") as client:
        with pytest.raises(RuntimeError, match="^Tool t has an output schema but did not return structured content$"):
            client.call_tool("t")


def test_list_tools_drops_tools_with_invalid_header_annotations(caplog: pytest.LogCaptureFixture) -> None:
    tools = {"result": {"tools": [
        {"name": "good", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}}},
    ]}}
    server = ScriptedServer({"tools/list": [tools], "tools/call": [DONE]})
    with Client(server, mode="2026-07-28") as client:
        assert [tool.name for tool in client.list_tools().tools] == ["good"]
        client.call_tool("good", {"r": " x"})
    assert "bad" in caplog.text
    assert server.sent[-1][1]["Mcp-Param-R"] == "=?base64?IHg=?="


def test_header_mismatch_earns_one_relisting_and_one_retry_only() -> None:
    mismatch = {"error": {"code": -32020, "message": "Mcp-Param-R header does not match argument 'r'"}}
    listed = {"result": {"tools": [
        {"name": "t", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
    ]}}
    server = ScriptedServer({"tools/list": [listed], "tools/call": [mismatch]})
    with Client(server, mode="2026-07-28") as client:
        with pytest.raises(MCPError) as refused:
            client.call_tool("t", {"r": "x"})
    assert refused.value.error.code == -32020
    assert server.methods().count("tools/list") == 1
    assert len(server.calls()) == 2
    assert "Mcp-Param-R" not in server.sent[-3][1] and server.sent[-1][1]["Mcp-Param-R"] == "x"


def test_header_mismatch_with_nothing_new_to_learn_is_not_retried() -> None:
    mismatch = {"error": {"code": -32020, "message": "Mcp-Name header does not match params.name"}}
    listed = {"result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}
    server = ScriptedServer({"tools/list": [listed], "tools/call": [mismatch]})
    with Client(server, mode="2026-07-28") as client:
        client.list_tools()
        with pytest.raises(MCPError):
            client.call_tool("t")
    assert server.methods().count("tools/list") == 2
    assert len(server.calls()) == 1


def test_a_discover_probe_leaves_the_negotiated_version_alone_while_it_travels() -> None:
    """``send_discover(version)`` stamps its own request: another thread's request sent meanwhile
    still speaks the session's version (it used to be switched for the probe's duration)."""
    server = ScriptedServer({"server/discover": [DISCOVER], "initialize": [INITIALIZE]})
    seen_during_probe: list[str | None] = []
    answer = server.request

    def request(message: dict[str, Any], **options: Any) -> dict[str, Any]:
        if message["method"] == "server/discover":
            seen_during_probe.append(client.session.protocol_version)
        return answer(message, **options)

    server.request = request  # type: ignore[method-assign]
    with Client(server, mode="legacy") as client:
        raw = client.session.send_discover("2026-07-28")
    assert raw["supportedVersions"] == ["2026-07-28"] and seen_during_probe == ["2025-11-25"]
    probe, headers = next((m, h) for m, h in server.sent if m.get("method") == "server/discover")
    assert probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert headers == {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}


def test_discover_probes_once_more_at_a_version_the_refusal_names() -> None:
    refusal = {"error": {"code": -32022, "message": "Unsupported",
                         "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}
    server = ScriptedServer({"server/discover": [refusal, DISCOVER]})
    with Client(server) as client:
        assert client.protocol_version == "2026-07-28"
    assert server.methods() == ["server/discover", "server/discover"]
