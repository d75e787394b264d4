"""Security requirements (protocol.md §7), one test each where ``test_request_state.py``,
``test_http_server.py`` and ``test_modern_http.py`` do not already pin them.

- DNS rebinding: foreign and look-alike ``Host``/``Origin`` values, ``Origin: null``, and the
  loopback spellings that must pass, on both eras; custom routes checked the same way unless they
  opt out;
- principals: ``requestState`` and legacy session ids are bound to the authenticated user
  (``REMOTE_USER``, set here by a WSGI middleware as a host framework would);
- session ids: 128 random bits, visible ASCII, never repeated;
- internal errors on 2026-07-28 reveal nothing (a crashing prompt or completion handler answers
  -32603 ``Internal server error``, a crashing resource or template names only its URI, as the
  official SDK does); rejected-state reasons go to the log only;
- stdio: stdout carries JSON-RPC lines only, even when tools print or crash.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any, Callable

import pytest
import requests
from conftest import (
    LEGACY,
    final_message,
    initialize_params,
    legacy_handshake,
    modern_params,
    modern_post,
    modern_rpc,
    post,
    request_message,
)
from pydantic import BaseModel
from test_stdio_server import StdioPeer

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

FROZEN = {"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}}
CAPS = {"elicitation": {}}


class Ok(BaseModel):
    ok: bool


def vault() -> MCPServer:
    mcp = MCPServer("SecVault")

    @mcp.tool()
    def open_vault(door: str, ctx: Context) -> str:
        return f"{door}: {ctx.elicit(f'Open {door}?', schema=Ok).action}"

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        return str(ctx.request_context.request.environ.get("REMOTE_USER"))

    @mcp.resource("res://crash")
    def crash() -> str:
        raise RuntimeError("db password=hunter2")

    @mcp.resource("res://crash/{key}")
    def crash_template(key: str) -> str:
        raise RuntimeError("db password=hunter2")

    @mcp.prompt()
    def broken() -> str:
        raise RuntimeError("db password=hunter2")

    @mcp.completion()
    def complete(ref: Any, argument: Any, context: Any) -> Any:
        raise RuntimeError("db password=hunter2")

    return mcp


class AsUser:
    """WSGI middleware: authenticate from an ``X-Test-User`` header, as a host framework would."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        user = environ.get("HTTP_X_TEST_USER")
        if user:
            environ["REMOTE_USER"] = user
        return self.app(environ, start_response)


@pytest.fixture
def authed(serve_wsgi: Callable[[Any], str]) -> Iterator[str]:
    app = vault().wsgi_app()
    try:
        yield serve_wsgi(AsUser(app)) + app.path
    finally:
        app.close()


# --- DNS rebinding ----------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example.com", "localhost.evil.com", "127.0.0.1.nip.io", "localhost:",
                                  "localhost:80:80", "127.0.0.2", "0.0.0.0", "[::2]:8000", "localhost@evil.com"])
def test_foreign_hosts_are_refused_on_both_eras(serve_http: Callable[..., str], host: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    url = serve_http(vault())
    with caplog.at_level(logging.WARNING, logger="minimcp.server.wsgi"):
        legacy = post(url, request_message("initialize", initialize_params()), headers={"Host": host})
        modern, _ = modern_post(url, "server/discover", {}, headers={"Host": host})
    assert (legacy.status_code, legacy.text) == (421, "Invalid Host header")
    assert (modern.status_code, modern.text) == (421, "Invalid Host header")
    assert repr(host) in caplog.text


@pytest.mark.parametrize("origin", ["null", "http://evil.example.com", "http://localhost.evil.com",
                                    "http://localhost:1@evil.com", "http://127.0.0.1.nip.io", "file://",
                                    "http://localhost:abc", "chrome-extension://abcdef"])
def test_foreign_origins_are_refused_on_both_eras(serve_http: Callable[..., str], origin: str) -> None:
    url = serve_http(vault())
    legacy = post(url, request_message("initialize", initialize_params()), headers={"Origin": origin})
    modern, _ = modern_post(url, "server/discover", {}, headers={"Origin": origin})
    assert (legacy.status_code, legacy.text) == (403, "Invalid Origin header")
    assert (modern.status_code, modern.text) == (403, "Invalid Origin header")


def pay_server() -> MCPServer:
    """A server with a page that takes money (as ``examples/payment_page.py``) and a public one."""
    from werkzeug.wrappers import Response

    mcp = MCPServer("Shop")

    @mcp.custom_route("/pay", methods=["POST"])
    def pay(request: Any) -> Any:
        return Response("paid")

    @mcp.custom_route("/status", methods=["GET"], dns_rebinding_protection=False)
    def status(request: Any) -> Any:
        return Response("up")

    return mcp


@pytest.mark.parametrize("headers, status, text", [
    ({"Host": "evil.example.com"}, 421, "Invalid Host header"),
    ({"Origin": "http://evil.example.com"}, 403, "Invalid Origin header"),
    ({"Host": "localhost.evil.com", "Origin": "http://localhost.evil.com"}, 421, "Invalid Host header"),
    ({"Host": "localhost:8000", "Origin": "http://localhost:8000"}, 200, "paid"),
    ({}, 200, "paid"),
])
def test_custom_routes_get_the_dns_rebinding_protection(serve_http: Callable[..., str], headers: dict[str, str],
                                                        status: int, text: str) -> None:
    base = serve_http(pay_server()).rsplit("/mcp", 1)[0]
    response = requests.post(base + "/pay", headers=headers, timeout=10)
    assert (response.status_code, response.text) == (status, text)


def test_a_custom_route_can_opt_out_of_the_dns_rebinding_protection(serve_http: Callable[..., str]) -> None:
    base = serve_http(pay_server()).rsplit("/mcp", 1)[0]
    response = requests.get(base + "/status", headers={"Host": "status.example.com", "Origin": "http://a.example"},
                            timeout=10)
    assert (response.status_code, response.text) == (200, "up")


def test_custom_routes_follow_the_transport_security_settings(serve_http: Callable[..., str]) -> None:
    from minimcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(allowed_hosts=["shop.example.com"], allowed_origins=["https://shop.example.com"])
    base = serve_http(pay_server(), transport_security=security).rsplit("/mcp", 1)[0]
    allowed = {"Host": "shop.example.com", "Origin": "https://shop.example.com"}
    assert requests.post(base + "/pay", headers=allowed, timeout=10).text == "paid"
    assert requests.post(base + "/pay", timeout=10).status_code == 421  # 127.0.0.1 is not listed now
    assert requests.post(base + "/pay", headers={**allowed, "Origin": "https://evil.example"},
                         timeout=10).status_code == 403


@pytest.mark.parametrize("host, origin", [
    ("localhost", None), ("LOCALHOST:9", "http://LocalHost:9"), ("127.0.0.1:1", "https://127.0.0.1"),
    ("[::1]", "http://[::1]:3000"), ("[::1]:65535", "http://localhost:5173/"),
])
def test_loopback_spellings_are_accepted(serve_http: Callable[..., str], host: str, origin: str | None) -> None:
    url = serve_http(vault())
    headers = {"Host": host, **({"Origin": origin} if origin else {})}
    assert post(url, request_message("initialize", initialize_params()), headers=headers).status_code == 200
    response, _ = modern_post(url, "server/discover", {}, headers=headers)
    assert response.status_code == 200


# --- principals ---------------------------------------------------------------------------------------
def call_as(url: str, user: str | None, state: Any = None, answers: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "open_vault", "arguments": {"door": "front"}}
    if state is not None:
        params.update(requestState=state, inputResponses=answers or {
            "elicit:0": {"action": "accept", "content": {"ok": True}}})
    response, message = modern_post(url, "tools/call", params, capabilities=CAPS,
                                    headers={"X-Test-User": user} if user else None)
    return final_message(response, message["id"])


@pytest.mark.parametrize("minted_by, used_by, reason", [
    ("alice", "bob", "principal"), ("alice", None, "principal drift"), (None, "alice", "principal drift")])
def test_request_state_is_bound_to_the_principal(authed: str, minted_by: str | None, used_by: str | None,
                                                 reason: str, caplog: pytest.LogCaptureFixture) -> None:
    state = call_as(authed, minted_by)["result"]["requestState"]
    with caplog.at_level(logging.WARNING, logger="minimcp.server.request_state"):
        answer = call_as(authed, used_by, state)
    assert answer["error"] == FROZEN  # the reason never reaches the client ...
    assert caplog.records[-1].getMessage() == f"requestState rejected on tools/call: {reason}"  # ... only the log
    assert call_as(authed, minted_by, state)["result"]["content"][0]["text"] == "front: accept"


def test_a_custom_principal_binding(serve_http: Callable[..., str]) -> None:
    from minimcp.server.mcpserver import RequestStateSecurity

    def tenant(rc: Any) -> str | None:
        return rc.request.headers.get("X-Tenant")

    mcp = vault()
    mcp.request_state_security = RequestStateSecurity(keys=[b"k" * 32], bind_principal=tenant)
    url = serve_http(mcp)
    response, _ = modern_post(url, "tools/call", {"name": "open_vault", "arguments": {"door": "d"}},
                              capabilities=CAPS, headers={"X-Tenant": "t1"})
    state = response.json()["result"]["requestState"]
    params = {"name": "open_vault", "arguments": {"door": "d"}, "requestState": state,
              "inputResponses": {"elicit:0": {"action": "decline"}}}
    other, message = modern_post(url, "tools/call", params, capabilities=CAPS, headers={"X-Tenant": "t2"})
    assert final_message(other, message["id"])["error"] == FROZEN
    same, message = modern_post(url, "tools/call", params, capabilities=CAPS, headers={"X-Tenant": "t1"})
    assert final_message(same, message["id"])["result"]["content"][0]["text"] == "d: decline"


def test_a_legacy_session_id_is_useless_to_another_user(authed: str) -> None:
    message = request_message("initialize", initialize_params())
    opened = post(authed, message, headers={"X-Test-User": "alice"})
    session_id = opened.headers["Mcp-Session-Id"]

    def as_user(user: str | None, body: Any) -> requests.Response:
        return post(authed, body, session_id=session_id, protocol_version=LEGACY,
                    headers={"X-Test-User": user} if user else None)

    assert as_user("alice", {"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
    for intruder in ("bob", None):
        stolen = as_user(intruder, request_message("tools/call", {"name": "whoami", "arguments": {}}))
        assert stolen.status_code == 404 and stolen.json()["error"]["message"] == "Session not found"
        deleted = requests.delete(authed, headers={"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY,
                                                   **({"X-Test-User": intruder} if intruder else {})}, timeout=10)
        assert deleted.status_code == 404
    mine = as_user("alice", request_message("tools/call", {"name": "whoami", "arguments": {}}))
    assert final_message(mine)["result"]["content"][0]["text"] == "alice"


def test_the_principal_hook_is_the_one_place_identity_is_read(serve_http: Callable[..., str]) -> None:
    """An authorization layer swaps ``principal=``: it binds sessions and requestState, and handlers see it."""
    mcp = vault()

    @mcp.tool()
    def who(ctx: Context) -> str:
        return str(ctx.request_context.transport.principal)

    url = serve_http(mcp, principal=lambda environ: environ.get("HTTP_X_TOKEN_SUBJECT"))
    opened = post(url, request_message("initialize", initialize_params()), headers={"X-Token-Subject": "sub-1"})
    session_id = opened.headers["Mcp-Session-Id"]
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id=session_id,
         protocol_version=LEGACY, headers={"X-Token-Subject": "sub-1"})
    call = request_message("tools/call", {"name": "who", "arguments": {}})
    mine = post(url, call, session_id=session_id, protocol_version=LEGACY, headers={"X-Token-Subject": "sub-1"})
    assert final_message(mine)["result"]["content"][0]["text"] == "sub-1"
    # REMOTE_USER no longer counts: the hook replaced it.
    stolen = post(url, call, session_id=session_id, protocol_version=LEGACY, headers={"X-Token-Subject": "sub-2"})
    assert stolen.status_code == 404
    response, _ = modern_post(url, "tools/call", {"name": "open_vault", "arguments": {"door": "d"}},
                              capabilities=CAPS, headers={"X-Token-Subject": "sub-1"})
    params = {"name": "open_vault", "arguments": {"door": "d"}, "requestState": response.json()["result"]["requestState"],
              "inputResponses": {"elicit:0": {"action": "decline"}}}
    other, message = modern_post(url, "tools/call", params, capabilities=CAPS, headers={"X-Token-Subject": "sub-2"})
    assert final_message(other, message["id"])["error"] == FROZEN


# --- session ids ---------------------------------------------------------------------------------------
def test_session_ids_are_random_visible_ascii_and_never_repeat(serve_http: Callable[..., str]) -> None:
    url = serve_http(vault())
    ids = [legacy_handshake(url).session_id for _ in range(50)]
    assert len(set(ids)) == 50
    # 128 bits from secrets.token_hex(16), then the tag of the process that minted them (one for all)
    assert all(re.fullmatch(r"[0-9a-f]{32}-[0-9a-f]{8}", i) for i in ids)
    assert len({i.split("-")[1] for i in ids}) == 1
    assert all(0x21 <= ord(c) <= 0x7E for i in ids for c in i)
    ones = sum(bin(int(i.split("-")[0], 16)).count("1") for i in ids)
    assert 0.45 < ones / (128 * 50) < 0.55  # no structure: half the bits set, as random bits are


# --- internal errors reveal nothing on 2026-07-28 -------------------------------------------------------
@pytest.mark.parametrize("method, params", [
    ("resources/read", {"uri": "res://crash"}), ("resources/read", {"uri": "res://crash/x"}),
    ("prompts/get", {"name": "broken"}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "broken"}, "argument": {"name": "a", "value": ""}}),
])
def test_internal_errors_are_opaque_on_modern(serve_http: Callable[..., str], method: str, params: dict[str, Any],
                                              caplog: pytest.LogCaptureFixture) -> None:
    url = serve_http(vault())
    with caplog.at_level(logging.ERROR):
        answer = modern_rpc(url, method, params)
    error = answer["error"]
    assert error["code"] == -32603 and "hunter2" not in json.dumps(error), answer
    expected = {  # a crashing resource names its URI, as in the official SDK; nothing of the exception
        "res://crash": "Error reading resource res://crash",
        "res://crash/x": "Error creating resource from template res://crash/x",
    }.get(params.get("uri", ""), "Internal server error")
    assert error["message"] == expected
    assert "hunter2" in caplog.text  # the detail is for the operator's log


def test_an_unknown_prompt_is_invalid_params_not_an_internal_error(serve_http: Callable[..., str]) -> None:
    url = serve_http(vault())
    answer = modern_rpc(url, "prompts/get", {"name": "nope"})
    assert answer["error"] == {"code": -32602, "message": "Unknown prompt: nope"}


def test_a_cancel_naming_an_unhashable_id_is_ignored(serve_http: Callable[..., str]) -> None:
    url = serve_http(vault())
    session = legacy_handshake(url)
    for request_id in ([], {}, None, 1.5):
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
        assert session.post(cancel).status_code == 202
    assert session.call_tool("whoami")["content"][0]["text"] == "None"


def test_a_request_state_spelled_differently_is_refused(serve_http: Callable[..., str]) -> None:
    """Base64 decoders skip stray characters and padding bits; the seal accepts one spelling only."""
    url = serve_http(vault())
    state = call_as(url, None)["result"]["requestState"]
    for variant in (state + "=", state + "\x00", state[:10] + "\n" + state[10:], state + "*"):
        assert call_as(url, None, variant)["error"] == FROZEN
    assert call_as(url, None, state)["result"]["content"][0]["text"] == "front: accept"


# --- stdio ----------------------------------------------------------------------------------------------
def test_stdout_stays_clean_when_tools_print_and_crash() -> None:
    peer = StdioPeer()
    try:
        peer.handshake(LEGACY)
        assert peer.request("tools/call", {"name": "noisy", "arguments": {"text": "t"}})["result"]
        crashed = peer.request("tools/call", {"name": "boom", "arguments": {}})["result"]
        assert crashed["isError"] is True
        modern = peer.request("tools/call", modern_params({"name": "boom", "arguments": {}}))
        assert modern["result"]["isError"] is True and modern["result"]["resultType"] == "complete"
        peer.send_raw(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[]}}\n')
        assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "after"}})["result"][
            "content"][0]["text"] == "after"
        assert peer.close_stdin() == 0
        leftover = []
        while not peer.lines.empty():
            line = peer.lines.get()
            if line is not None:
                leftover.append(line)
        assert leftover == []  # nothing but the answers above ever reached stdout
        assert "print says t" in peer.stderr_text()
    finally:
        peer.kill()

