"""Several processes without a shared backend: a session one opened, asked of another, says why it fails.

Each process tags the session ids it mints; a process that does not know a well-formed id of
another's answers 404 with a message naming the fix (a shared backend, or sticky sessions), and
the client's ``SessionExpired`` carries that message. An id of its own that it no longer knows is
still the plain "Session not found". Real server processes of ``tests/servers/shared_server.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from cluster_support import programs
from conftest import LEGACY, legacy_handshake, post, request_message

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.client.transports.base import SessionExpired


@pytest.fixture(scope="module")
def two() -> Iterator[list[str]]:
    """The endpoints of two processes of one app, each keeping its sessions to itself."""
    with programs(2, None) as servers:
        yield [server.base + "/mcp" for server in servers]


def refusal(response: requests.Response) -> str:
    assert response.status_code == 404, (response.status_code, response.text)
    message: str = response.json()["error"]["message"]
    return message


def test_a_session_of_another_process_is_refused_naming_the_fix(two: list[str]) -> None:
    home, elsewhere = two
    session = legacy_handshake(home)
    call = request_message("tools/call", {"name": "pid", "arguments": {}})
    message = refusal(post(elsewhere, call, session_id=session.session_id, protocol_version=LEGACY))
    assert "another server process" in message and 'backend="redis://' in message and "sticky" in message
    assert session.call_tool("pid")["structuredContent"]["result"] > 0  # the session lives on where it began


def test_a_session_this_process_ended_is_plainly_not_found(two: list[str]) -> None:
    session = legacy_handshake(two[0])
    assert session.delete().status_code == 200
    call = request_message("tools/call", {"name": "pid", "arguments": {}})
    assert refusal(session.post(call)) == "Session not found"
    forged = "0" * 32 + "-" + "zz"  # not an id any process mints
    assert refusal(post(two[1], call, session_id=forged, protocol_version=LEGACY)) == "Session not found"


class InitializeHome(requests.Session):
    """``initialize`` to the first endpoint, everything else to the second: a load balancer without
    sticky sessions in front of two processes without a shared backend."""

    def __init__(self, home: str, elsewhere: str) -> None:
        super().__init__()
        self.home, self.elsewhere = home, elsewhere

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        data = kwargs.get("data")
        body = json.loads(data) if isinstance(data, (bytes, str)) and data else {}
        target = self.home if isinstance(body, dict) and body.get("method") == "initialize" else self.elsewhere
        return super().request(method, target, *args, **kwargs)


def test_the_clients_session_expired_carries_the_servers_message(two: list[str]) -> None:
    transport = streamable_http_client(two[0], http_client=InitializeHome(*two), terminate_on_close=False)
    with Client(transport, mode="legacy") as client, pytest.raises(SessionExpired) as lost:
        client.call_tool("pid", {})
    assert 'backend="redis://' in str(lost.value) and "sticky" in str(lost.value)
