"""Sealed requestState on 2026-07-28: what it binds, how it rotates, and the one frozen error.

These tests speak the wire directly (a real HTTP server, ``requests``), so what they check is
what any client sees.
"""

import base64
import hashlib
import hmac
import json
import logging
import math
import os
import time
from typing import Any, Callable

import pytest
from conftest import busy_threads, final_message, modern_post, modern_rpc
from pydantic import BaseModel

from minimcp import types
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context, RequestStateSecurity
from minimcp.server.request_state import HMACRequestStateCodec

KEY_A = b"a" * 32
KEY_B = b"b" * 32
FROZEN = {"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}}
CAPS = {"elicitation": {}}


class Ok(BaseModel):
    ok: bool


def server(**options: Any) -> MCPServer:
    mcp = MCPServer("Vault", **options)

    @mcp.tool()
    def open_vault(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action}"

    @mcp.tool()
    def other(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"other {door}: {answer.action}"

    return mcp


def first_round(url: str, tool: str = "open_vault", door: str = "front") -> dict[str, Any]:
    answer = modern_rpc(url, "tools/call", {"name": tool, "arguments": {"door": door}}, capabilities=CAPS)
    result = answer["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["elicit:0"]
    return result


def retry(url: str, state: Any, tool: str = "open_vault", door: str = "front") -> dict[str, Any]:
    params = {"name": tool, "arguments": {"door": door}, "requestState": state,
              "inputResponses": {"elicit:0": {"action": "accept", "content": {"ok": True}}}}
    response, message = modern_post(url, "tools/call", params, capabilities=CAPS)
    return final_message(response, message["id"])


def test_an_intact_state_completes(serve_http: Callable[..., str]) -> None:
    url = serve_http(server())
    state = first_round(url)["requestState"]
    assert retry(url, state)["result"]["content"][0]["text"] == "front: accept"


@pytest.mark.parametrize("mangle", [
    lambda s: s + "-TAMPERED",
    lambda s: s[:-10],
    lambda s: s[:20] + ("A" if s[20] != "A" else "B") + s[21:],
    lambda s: "m1.garbage",
    lambda s: "",
    lambda s: 12345,
])
def test_tampered_states_get_the_frozen_error(serve_http: Callable[..., str], mangle: Callable[[str], Any],
                                              caplog: pytest.LogCaptureFixture) -> None:
    url = serve_http(server())
    state = first_round(url)["requestState"]
    with caplog.at_level(logging.WARNING, logger="minimcp.server.request_state"):
        answer = retry(url, mangle(state))
    assert answer["error"] == FROZEN
    assert "requestState rejected on tools/call" in caplog.text


def test_state_is_bound_to_the_tool_and_the_arguments(serve_http: Callable[..., str]) -> None:
    url = serve_http(server())
    state = first_round(url)["requestState"]
    assert retry(url, state, tool="other")["error"] == FROZEN
    assert retry(url, state, door="back")["error"] == FROZEN


def test_an_expired_state_is_refused(serve_http: Callable[..., str]) -> None:
    url = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_A], ttl=0.2)))
    state = first_round(url)["requestState"]
    time.sleep(0.4)
    assert retry(url, state)["error"] == FROZEN


def test_a_state_minted_by_another_key_or_audience_is_refused(serve_http: Callable[..., str]) -> None:
    minted = first_round(serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_A]))))
    foreign_key = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_B])))
    assert retry(foreign_key, minted["requestState"])["error"] == FROZEN
    other_name = MCPServer("Another", request_state_security=RequestStateSecurity(keys=[KEY_A]))

    @other_name.tool()
    def open_vault(door: str, ctx: Context) -> str:
        return "never"

    assert retry(serve_http(other_name), minted["requestState"])["error"] == FROZEN


def test_key_rotation_across_two_servers(serve_http: Callable[..., str]) -> None:
    old = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_A])))
    rolling = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_B, KEY_A])))
    new_only = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_B])))
    state_from_old = first_round(old)["requestState"]
    assert retry(rolling, state_from_old)["result"]["content"][0]["text"] == "front: accept"
    state_from_rolling = first_round(rolling)["requestState"]
    assert retry(new_only, state_from_rolling)["result"]["content"][0]["text"] == "front: accept"
    assert retry(new_only, state_from_old)["error"] == FROZEN


def test_every_round_mints_a_different_state_and_no_thread_is_held(serve_http: Callable[..., str]) -> None:
    url = serve_http(server())
    first = first_round(url)["requestState"]
    baseline = busy_threads()
    states = {first_round(url)["requestState"] for _ in range(30)}
    assert len(states) == 30 and first not in states
    assert busy_threads() <= baseline + 1


def test_garbage_input_responses_are_errors_not_results(serve_http: Callable[..., str]) -> None:
    url = serve_http(server())
    for responses in (None, {"elicit:0": 12345}, {"elicit:0": {"action": "maybe"}}):
        params: dict[str, Any] = {"name": "open_vault", "arguments": {"door": "front"}, "inputResponses": responses}
        if responses is None:
            params["inputResponses"] = None
            response, message = modern_post(url, "tools/call", params, capabilities=CAPS)
            answer = final_message(response, message["id"])
            assert answer.get("result", {}).get("resultType") != "complete"
            continue
        params["requestState"] = first_round(url)["requestState"]  # the round that asked elicit:0
        response, message = modern_post(url, "tools/call", params, capabilities=CAPS)
        answer = final_message(response, message["id"])
        assert "error" in answer and answer["error"]["code"] == -32602, answer


def test_an_answer_to_a_question_never_asked_is_not_used(serve_http: Callable[..., str]) -> None:
    """A first call carrying inputResponses (no requestState: nothing was asked yet) gets the
    question asked; the answer it brought along is not taken for one."""
    url = serve_http(server())
    params = {"name": "open_vault", "arguments": {"door": "front"},
              "inputResponses": {"elicit:0": {"action": "accept", "content": {"ok": True}}}}
    result = modern_rpc(url, "tools/call", params, capabilities=CAPS)["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["elicit:0"]
    assert retry(url, result["requestState"])["result"]["content"][0]["text"] == "front: accept"


def test_extra_and_missing_answers(serve_http: Callable[..., str]) -> None:
    url = serve_http(server())
    state = first_round(url)["requestState"]
    params = {"name": "open_vault", "arguments": {"door": "front"}, "requestState": state,
              "inputResponses": {"unrelated": {"action": "accept"}}}
    response, message = modern_post(url, "tools/call", params, capabilities=CAPS)
    again = final_message(response, message["id"])["result"]
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["elicit:0"]
    params["inputResponses"] = {"elicit:0": {"action": "decline"}, "extra": {"action": "accept"}}
    params["requestState"] = again["requestState"]
    response, message = modern_post(url, "tools/call", params, capabilities=CAPS)
    assert final_message(response, message["id"])["result"]["content"][0]["text"] == "front: decline"


def plain_tools_server() -> MCPServer:
    """Tools that take no ``Context``, so can ask nothing: their first call runs without a book."""
    mcp = MCPServer("Plain")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def own_round(door: str) -> types.InputRequiredResult:
        question = types.ElicitRequest(params=types.ElicitRequestFormParams(
            message=f"Open {door}?", requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}))
        return types.InputRequiredResult(input_requests={"confirm": question}, request_state="mine")

    return mcp


def test_a_tool_that_cannot_ask_still_has_its_own_input_required_sealed(serve_http: Callable[..., str]) -> None:
    url = serve_http(plain_tools_server())
    first = modern_rpc(url, "tools/call", {"name": "own_round", "arguments": {"door": "front"}}, capabilities=CAPS)
    result = first["result"]
    assert result["resultType"] == "input_required" and list(result["inputRequests"]) == ["confirm"]
    assert result["requestState"] != "mine"  # sealed, its own text inside
    answers = {"confirm": {"action": "accept", "content": {"ok": True}}}
    again = modern_rpc(url, "tools/call", {"name": "own_round", "arguments": {"door": "front"},
                                           "requestState": result["requestState"], "inputResponses": answers},
                       capabilities=CAPS)
    assert again["result"]["resultType"] == "input_required"
    assert again["result"]["requestState"] not in ("mine", result["requestState"])
    refused = modern_rpc(url, "tools/call", {"name": "own_round", "arguments": {"door": "front"},
                                             "requestState": "mine", "inputResponses": answers}, capabilities=CAPS)
    assert refused["error"] == FROZEN


@pytest.mark.parametrize("extra", [{"requestState": "forged"}, {"requestState": 7},
                                   {"inputResponses": {"x": 1}}, {"inputResponses": []}])
def test_a_tool_that_cannot_ask_still_checks_a_state_or_answers_sent_to_it(serve_http: Callable[..., str],
                                                                           extra: dict[str, Any]) -> None:
    url = serve_http(plain_tools_server())
    answer = modern_rpc(url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}, **extra}, capabilities=CAPS)
    assert answer["error"]["code"] == -32602, answer
    if "requestState" in extra:
        assert answer["error"] == FROZEN
    plain = modern_rpc(url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, capabilities=CAPS)
    assert plain["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_construction_errors() -> None:
    with pytest.raises(ValueError, match="exactly one of keys= or codec="):
        RequestStateSecurity()
    with pytest.raises(ValueError, match="at least 32 bytes of secret randomness; keys\\[0\\] is 7 bytes"):
        RequestStateSecurity(keys=[b"short!!"])
    with pytest.raises(TypeError, match="keys\\[0\\] is int"):
        RequestStateSecurity(keys=[7])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="keys\\[1\\] duplicates an earlier ring key"):
        RequestStateSecurity(keys=[KEY_A, KEY_A])
    with pytest.raises(ValueError, match="ttl must be a positive finite number, got 0"):
        RequestStateSecurity(keys=[KEY_A], ttl=0)
    with pytest.raises(ValueError, match="^request_state_security is configured but this server has no name."):
        MCPServer(request_state_security=RequestStateSecurity(keys=[KEY_A]))


def _hkdf(key: bytes, info: bytes) -> bytes:
    prk = hmac.new(b"minimcp request state", key, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def m1_seal(key: bytes, payload: bytes) -> str:
    """The ``m1.`` token earlier versions minted, written out from its description (HMAC-SHA256
    counter-mode keystream, then HMAC-SHA256 over key id, nonce and ciphertext)."""
    enc, mac, nonce = _hkdf(key, b"enc"), _hkdf(key, b"mac"), os.urandom(16)
    stream = b"".join(hmac.new(enc, nonce + i.to_bytes(4, "big"), hashlib.sha256).digest()
                      for i in range(math.ceil(len(payload) / 32)))
    body = hashlib.sha256(b"minimcp key id" + key).digest()[:4] + nonce + bytes(
        a ^ b for a, b in zip(payload, stream))
    return "m1." + _b64(body + hmac.new(mac, body, hashlib.sha256).digest())


def _canonical_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def test_a_state_written_from_the_documented_payload_opens(serve_http: Callable[..., str]) -> None:
    """States in flight outlive a release: a payload built by hand, its digests SHA-256 over sorted
    compact JSON (non-ASCII text as itself), opens and completes the call; a digest taken any other
    way (ASCII-escaped) is refused."""
    url = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_A])))
    question = first_round(url, door="Tür")["inputRequests"]["elicit:0"]

    def minted(spell: Callable[[Any], str]) -> str:
        payload = {"v": 1, "iat": time.time(), "m": "tools/call", "t": "open_vault", "a": spell({"door": "Tür"}),
                   "aud": "Vault", "p": None, "answers": {},
                   "asked": {"elicit:0": {"d": spell(question), "m": "elicitation/create"}}, "s": None}
        return HMACRequestStateCodec([KEY_A]).seal(json.dumps(payload).encode())

    assert retry(url, minted(_canonical_digest), door="Tür")["result"]["content"][0]["text"] == "Tür: accept"
    escaped = minted(lambda value: hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode())
                     .hexdigest())
    assert retry(url, escaped, door="Tür")["error"] == FROZEN


def test_a_state_sealed_by_the_earlier_m1_format_still_opens(serve_http: Callable[..., str]) -> None:
    """A rolling upgrade: a round minted by a process of the earlier version (``m1.``) completes on
    this one, and relabelling a body as the other version is refused."""
    url = serve_http(server(request_state_security=RequestStateSecurity(keys=[KEY_A])))
    state = first_round(url)["requestState"]
    assert state.startswith("m2.")
    payload = HMACRequestStateCodec([KEY_A]).unseal(state)
    legacy = m1_seal(KEY_A, payload)
    assert retry(url, legacy)["result"]["content"][0]["text"] == "front: accept"
    assert retry(url, "m2." + legacy[3:])["error"] == FROZEN
    assert retry(url, "m1." + first_round(url)["requestState"][3:])["error"] == FROZEN
    assert retry(url, m1_seal(KEY_B, payload))["error"] == FROZEN
