"""Checks the Flask and the Django example sites share: both serve the same notes tools to two
users, alice (who may use ``all_notes``) and bob (who may not), and each test module describes its
site with a ``Site`` (where it is, each user's API token, how to read its notes table)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import requests

from conftest import TIMEOUT, final_message, modern_headers, modern_params, request_message
from minimcp import Client, MCPError
from minimcp.client.streamable_http import streamable_http_client
from minimcp.types import ElicitResult

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])
ACCEPT = "application/json, text/event-stream"


class Site:
    """A running example site: its MCP ``url``, each user's API token, and its notes table."""

    def __init__(self, url: str, tokens: dict[str, str], notes: Callable[[], list[str]]) -> None:
        self.url = url
        self.tokens = tokens
        self.notes = notes

    def http(self, user: str) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.tokens[user]}"
        return session

    def client(self, user: str, mode: str, **options: Any) -> Client:
        return Client(streamable_http_client(self.url, http_client=self.http(user)), mode=mode, **options)

    def raw(self, user: str, message: dict[str, Any], **headers: str) -> requests.Response:
        """One POST as ``user``, for what the client would never send."""
        return self.http(user).post(self.url, json=message, timeout=TIMEOUT, stream=True,
                                    headers={"Accept": ACCEPT, **headers})


def text(result: Any) -> str:
    return result.content[0].text


def check_login_gate(site: Site) -> None:
    refused = requests.post(site.url, json=request_message("tools/list", modern_params()), timeout=TIMEOUT,
                            headers={**modern_headers("tools/list"), "Accept": ACCEPT})
    assert refused.status_code == 401
    assert "Authentication required" in refused.json()["error"]["message"]
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    wrong = requests.Session()
    wrong.headers["Authorization"] = "Bearer not-a-token"
    with pytest.raises(MCPError, match="Authentication required"):
        with Client(streamable_http_client(site.url, http_client=wrong)) as client:
            client.list_tools()
    foreign = site.raw("alice", request_message("tools/list", modern_params()),
                       **modern_headers("tools/list"), Origin="https://evil.example")
    assert foreign.status_code == 403


def check_user_and_database(site: Site, mode: str) -> None:
    with site.client("alice", mode) as alice, site.client("bob", mode) as bob:
        assert text(alice.call_tool("whoami", {})) == "alice"
        assert text(bob.call_tool("whoami", {})) == "bob"
        note = alice.call_tool("add_note", {"text": "alice's secret"}).structured_content["result"]
        bob.call_tool("add_note", {"text": "bob's list"})
        assert alice.call_tool("my_notes", {}).structured_content == {"result": [f"{note}: alice's secret"]}
        assert text(bob.call_tool("delete_note", {"note_id": note})) == f"You have no note {note}."
    assert sorted(site.notes()) == ["alice's secret", "bob's list"]


def check_delete_asks_first(site: Site, mode: str, confirm: bool) -> None:
    seen: list[str] = []

    def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params.message)
        return ElicitResult(action="accept", content={"confirm": confirm})

    with site.client("alice", mode, elicitation_callback=callback) as alice:
        note = alice.call_tool("add_note", {"text": "old"}).structured_content["result"]
        answer = text(alice.call_tool("delete_note", {"note_id": note}))
    assert seen == [f"Delete note {note} ('old')?"]
    assert answer == (f"Deleted note {note}." if confirm else "Kept it.")
    assert site.notes() == ([] if confirm else ["old"])


def check_permissions(site: Site, mode: str, requirement: str) -> None:
    with site.client("alice", mode) as alice, site.client("bob", mode) as bob:
        alice.call_tool("add_note", {"text": "mine"})
        assert "all_notes" in [tool.name for tool in alice.list_tools().tools]
        assert "all_notes" not in [tool.name for tool in bob.list_tools().tools]
        assert alice.call_tool("all_notes", {}).structured_content == {"result": ["alice: mine"]}
        with pytest.raises(MCPError, match=f"Permission denied: tool 'all_notes' requires {requirement}"):
            bob.call_tool("all_notes", {})
    listing = site.raw("bob", request_message("tools/list", modern_params()), **modern_headers("tools/list"))
    assert listing.json()["result"]["cacheScope"] == "private"  # it depends on who asks


def check_legacy_session_is_the_users(site: Site) -> None:
    init = site.raw("alice", request_message("initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
    versions = {"Mcp-Session-Id": init.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    assert site.raw("alice", {"jsonrpc": "2.0", "method": "notifications/initialized"}, **versions).status_code == 202
    stolen = site.raw("bob", request_message("tools/call", {"name": "my_notes", "arguments": {}}), **versions)
    assert stolen.status_code == 404
    mine = site.raw("alice", request_message("tools/call", {"name": "whoami", "arguments": {}}), **versions)
    assert final_message(mine)["result"]["content"][0]["text"] == "alice"


def check_request_state_is_the_users(site: Site) -> None:
    with site.client("alice", "auto") as alice:
        note = alice.call_tool("add_note", {"text": "keep me"}).structured_content["result"]
    params = {"name": "delete_note", "arguments": {"note_id": note}}
    capabilities = {"elicitation": {"form": {}}}
    headers = modern_headers("tools/call", params)
    asked = final_message(site.raw("alice", request_message("tools/call", modern_params(params, capabilities)),
                                   **headers))["result"]
    assert asked["resultType"] == "input_required"
    (key,) = asked["inputRequests"]
    retry = {**params, "requestState": asked["requestState"],
             "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}}
    hijack = final_message(site.raw("bob", request_message("tools/call", modern_params(retry, capabilities)), **headers))
    assert hijack["error"]["code"] == -32602
    assert site.notes() == ["keep me"]
    done = final_message(site.raw("alice", request_message("tools/call", modern_params(retry, capabilities)), **headers))
    assert done["result"]["content"][0]["text"] == f"Deleted note {note}."
