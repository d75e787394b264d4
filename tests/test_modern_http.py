"""2026-07-28 over Streamable HTTP: self-contained POSTs, no handshake, headers checked against the body."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import (
    MODERN,
    final_message,
    initialize_params,
    legacy_handshake,
    modern_headers,
    modern_meta,
    modern_post,
    modern_rpc,
    post,
    request_message,
)
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

SERVER_INFO = {"name": "modern-test", "version": "9.9"}


def build_server() -> MCPServer:
    mcp = MCPServer("modern-test", version="9.9", instructions="Be brief.")

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def era(ctx: Context) -> str:
        return f"{ctx.protocol_version} legacy={ctx.session.legacy}"

    @mcp.tool()
    def boom() -> str:
        raise RuntimeError("kaboom")

    return mcp


@pytest.fixture
def url(serve_http: Any) -> str:
    return serve_http(build_server())


def _error(response: Any, status: int, code: int, request_id: Any) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["id"] == request_id  # errors echo the request id
    assert "result" not in body
    assert body["error"]["code"] == code, body
    return body["error"]


# --- the happy path --------------------------------------------------------------------------------------
def test_tool_call_without_handshake(url: str) -> None:
    response, message = modern_post(url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response.headers  # no session is ever minted
    result = final_message(response, message["id"])["result"]
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert result["structuredContent"] == {"result": "hi"}
    assert result["isError"] is False
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO


def test_handler_sees_the_modern_era(url: str) -> None:
    result = modern_rpc(url, "tools/call", {"name": "era", "arguments": {}})["result"]
    assert result["content"][0]["text"] == "2026-07-28 legacy=False"


def test_tool_error_carries_result_type(url: str) -> None:
    result = modern_rpc(url, "tools/call", {"name": "boom", "arguments": {}})["result"]
    assert result["isError"] is True
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "Error executing tool boom"}]  # the text stays in the log
    unknown = modern_rpc(url, "tools/call", {"name": "nope", "arguments": {}})["result"]
    assert unknown["content"] == [{"type": "text", "text": "Unknown tool: nope"}]
    assert unknown["resultType"] == "complete"


def test_server_discover(url: str) -> None:
    result = modern_rpc(url, "server/discover")["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["instructions"] == "Be brief."
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")  # the official defaults, without cache_hints
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO
    assert "serverInfo" not in result  # identity lives in _meta on 2026-07-28


def test_tools_list_carries_result_type_and_cache_hints(url: str) -> None:
    result = modern_rpc(url, "tools/list")["result"]
    assert result["resultType"] == "complete"
    assert [t["name"] for t in result["tools"]] == ["echo", "era", "boom"]
    assert "ttlMs" in result and "cacheScope" in result
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO


def test_session_header_is_ignored_on_modern_requests(url: str) -> None:
    response, message = modern_post(url, "tools/call", {"name": "echo", "arguments": {"text": "x"}},
                                    headers={"Mcp-Session-Id": "no-such-session"})
    assert response.status_code == 200
    assert final_message(response, message["id"])["result"]["content"][0]["text"] == "x"
    assert "Mcp-Session-Id" not in response.headers


def test_header_values_are_trimmed(url: str) -> None:
    response, message = modern_post(url, "tools/call", {"name": "echo", "arguments": {"text": "t"}},
                                    headers={"Mcp-Name": "echo  ", "Mcp-Method": "tools/call\t"})
    assert response.status_code == 200, response.text
    assert final_message(response, message["id"])["result"]["content"][0]["text"] == "t"


def test_both_eras_side_by_side(url: str) -> None:
    session = legacy_handshake(url)
    assert session.call_tool("era")["content"][0]["text"] == "2025-11-25 legacy=True"
    assert modern_rpc(url, "tools/call", {"name": "era", "arguments": {}})["result"]["content"][0]["text"] \
        == "2026-07-28 legacy=False"
    assert "resultType" not in session.call_tool("echo", {"text": "a"})


# --- refusals ------------------------------------------------------------------------------------------------
def test_missing_meta(url: str) -> None:
    message = request_message("server/discover", {})
    response = post(url, message, headers=modern_headers("server/discover"))
    _error(response, 400, -32602, message["id"])


def test_meta_without_protocol_version(url: str) -> None:
    meta = modern_meta()
    del meta["io.modelcontextprotocol/protocolVersion"]
    message = request_message("tools/list", {"_meta": meta})
    response = post(url, message, headers=modern_headers("tools/list"))
    _error(response, 400, -32602, message["id"])


def test_meta_without_client_capabilities(url: str) -> None:
    meta = modern_meta()
    del meta["io.modelcontextprotocol/clientCapabilities"]
    message = request_message("tools/list", {"_meta": meta})
    response = post(url, message, headers=modern_headers("tools/list"))
    _error(response, 400, -32602, message["id"])


def test_header_and_meta_version_mismatch(url: str) -> None:
    message = request_message("tools/list", {"_meta": modern_meta(version="v999.0.0")})
    response = post(url, message, headers=modern_headers("tools/list"))  # header says 2026-07-28
    _error(response, 400, -32020, message["id"])


def test_missing_protocol_version_header(url: str) -> None:
    message = request_message("tools/list", {"_meta": modern_meta()})
    response = post(url, message, headers={"Mcp-Method": "tools/list"})
    _error(response, 400, -32020, message["id"])


def test_unsupported_version(url: str) -> None:
    message = request_message("tools/list", {"_meta": modern_meta(version="v999.0.0")})
    response = post(url, message, headers=modern_headers("tools/list", version="v999.0.0"))
    error = _error(response, 400, -32022, message["id"])
    assert error["data"]["requested"] == "v999.0.0"
    assert error["data"]["supported"] == [MODERN]
    discovered = modern_rpc(url, "server/discover")["result"]["supportedVersions"]
    assert set(error["data"]["supported"]) <= set(discovered)


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe"])
def test_legacy_only_methods_are_not_found(url: str, method: str) -> None:
    params = initialize_params() if method == "initialize" else {}
    response, message = modern_post(url, method, params)
    _error(response, 404, -32601, message["id"])


def test_unknown_method_is_not_found(url: str) -> None:
    response, message = modern_post(url, "tools/frobnicate")
    _error(response, 404, -32601, message["id"])


def test_mcp_method_mismatch(url: str) -> None:
    response, message = modern_post(url, "tools/list", headers={"Mcp-Method": "TOOLS/LIST"})
    _error(response, 400, -32020, message["id"])
    response, message = modern_post(url, "tools/call", {"name": "echo", "arguments": {"text": "a"}},
                                    headers={"Mcp-Method": "tools/list"})
    _error(response, 400, -32020, message["id"])


def test_missing_mcp_method(url: str) -> None:
    message = request_message("tools/list", {"_meta": modern_meta()})
    response = post(url, message, headers={"MCP-Protocol-Version": MODERN})
    _error(response, 400, -32020, message["id"])


def test_mcp_name_mismatch_and_absence(url: str) -> None:
    params = {"name": "echo", "arguments": {"text": "a"}}
    response, message = modern_post(url, "tools/call", params, headers={"Mcp-Name": "boom"})
    _error(response, 400, -32020, message["id"])
    message = request_message("tools/call", {**params, "_meta": modern_meta()})
    response = post(url, message, headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"})
    _error(response, 400, -32020, message["id"])


def test_mcp_name_base64_sentinel(url: str) -> None:
    response, message = modern_post(url, "tools/call", {"name": "echo", "arguments": {"text": "b"}},
                                    headers={"Mcp-Name": "=?base64?ZWNobw==?="})
    assert response.status_code == 200, response.text
    assert final_message(response, message["id"])["result"]["content"][0]["text"] == "b"
    response, message = modern_post(url, "tools/call", {"name": "echo", "arguments": {"text": "b"}},
                                    headers={"Mcp-Name": "=?base64?ZWNobw?="})  # bad padding
    _error(response, 400, -32020, message["id"])


def test_server_keeps_serving_after_refusals(url: str) -> None:
    for _ in range(2):
        post(url, request_message("tools/list", {}), headers=modern_headers("tools/list"))
        modern_post(url, "ping")
    assert modern_rpc(url, "tools/call", {"name": "echo", "arguments": {"text": "ok"}})["result"]["content"] \
        == [{"type": "text", "text": "ok"}]



# --- the declarations of repeated envelopes ----------------------------------------------------------------
def _declared_call(url: str, capabilities: Any, info: Any) -> dict[str, Any]:
    params = {"name": "declared", "arguments": {}}
    message = request_message("tools/call", {**params, "_meta": modern_meta(
        capabilities, **{"io.modelcontextprotocol/clientInfo": info})})
    response = post(url, message, headers=modern_headers("tools/call", params))
    return final_message(response, message["id"])


def test_each_request_gets_models_of_its_own_declarations(serve_http: Any) -> None:
    """A pair of declarations seen before is not validated again, yet every request still reads its
    own values as models of its own: a handler that changes them changes nothing for the next one,
    and values equal in Python but not in JSON (1 and true) stay apart."""
    mcp = MCPServer("declarations")

    @mcp.tool()
    def declared(ctx: Context) -> str:
        capabilities = ctx.session.client_capabilities
        seen = f"{ctx.session.client_info.name} {capabilities.experimental} {capabilities.elicitation is not None}"
        capabilities.elicitation = None
        capabilities.experimental = {"changed": {}}
        return seen

    url = serve_http(mcp)
    one = {"experimental": {"x": {"a": 1}}, "elicitation": {"form": {}}}
    for _ in range(3):
        answer = _declared_call(url, one, {"name": "first", "version": "1"})
        assert answer["result"]["content"][0]["text"] == "first {'x': {'a': 1}} True"
    answer = _declared_call(url, {"experimental": {"x": {"a": True}}}, {"name": "first", "version": "1"})
    assert answer["result"]["content"][0]["text"] == "first {'x': {'a': True}} False"
    # Equal to the pair seen (1 == true), so taken without validating it again: still its own values.
    answer = _declared_call(url, {**one, "experimental": {"x": {"a": True}}}, {"name": "first", "version": "1"})
    assert answer["result"]["content"][0]["text"] == "first {'x': {'a': True}} True"
    # A refusal is still a refusal after the valid pair was seen.
    answer = _declared_call(url, one, {"name": 1, "version": "1"})
    assert answer["error"]["code"] == -32602
    answer = _declared_call(url, {**one, "elicitation": "yes"}, {"name": "first", "version": "1"})
    assert answer["error"]["code"] == -32602


def test_the_declarations_kept_are_bounded(serve_http: Any) -> None:
    """Clients choose their names and declarations: the pairs kept to skip validating a repeat stay
    within their bounds however many a client invents, and each request is still answered."""
    from minimcp.server.core import era

    mcp = MCPServer("declarations")

    @mcp.tool()
    def declared(ctx: Context) -> str:
        return f"{ctx.session.client_info.name} {sorted(ctx.session.client_capabilities.experimental or {})}"

    url = serve_http(mcp)
    for i in range(era._MAX_DECLARING_CLIENTS + 10):
        answer = _declared_call(url, {}, {"name": f"client-{i}", "version": "1"})
        assert answer["result"]["content"][0]["text"] == f"client-{i} []"
        assert len(era._VALID_DECLARATIONS) <= era._MAX_DECLARING_CLIENTS
    for i in range(era._MAX_PAIRS_PER_CLIENT + 3):
        answer = _declared_call(url, {"experimental": {f"x{i}": {}}}, {"name": "shifting", "version": "1"})
        assert answer["result"]["content"][0]["text"] == f"shifting ['x{i}']"
    assert len(era._VALID_DECLARATIONS[("shifting", "1")]) == era._MAX_PAIRS_PER_CLIENT
    huge = {"experimental": {f"x{i}": {"pad": "." * 100} for i in range(60)}}
    answer = _declared_call(url, huge, {"name": "huge", "version": "1"})
    assert answer["result"]["content"][0]["text"].startswith("huge ['x0', 'x1', 'x10'")
    assert ("huge", "1") not in era._VALID_DECLARATIONS  # over the text bound: validated every time
