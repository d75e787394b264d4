"""The Django endpoint as a project without the usual pieces meets it (``servers/django_members.py``,
served by minimcp's own HTTP server in a process of its own): users that are no database rows,
known to MCP by email (``principal=``), and no ``CommonMiddleware``, so that nothing but the
endpoint checks the ``Host`` a client sends.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
from cluster_support import SERVERS
from conftest import ROOT, TIMEOUT, modern_headers, modern_params, request_message, server_process, wait_for
from host_support import ACCEPT, ERAS, text
from test_cancel_on_hangup import modern_call, send_and_hang_up

from minimcp import Client, MCPError
from minimcp.client.streamable_http import streamable_http_client
from minimcp.types import ElicitResult


@contextmanager
def members_site(**settings: str) -> Iterator[str]:
    """The project, with its ``MEMBERS_*`` settings; yields its endpoint's URL."""
    env = {**os.environ, **settings,
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(SERVERS), os.environ.get("PYTHONPATH", "")])}
    with server_process([sys.executable, "django_members.py"], env, cwd=SERVERS) as server:
        yield server.base + "/mcp"


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with members_site(MEMBERS_ALLOWED_HOSTS="127.0.0.1") as url:
        yield url


def member(url: str, who: str, mode: str = "auto", **options: Any) -> Client:
    http = requests.Session()
    http.headers["X-Member"] = who
    return Client(streamable_http_client(url, http_client=http), mode=mode, **options)


def call(url: str, name: str, **headers: str) -> requests.Response:
    params = modern_params({"name": name, "arguments": {}})
    return requests.post(url, json=request_message("tools/call", params, id=1), timeout=TIMEOUT,
                         headers={**modern_headers("tools/call", params), "Accept": ACCEPT,
                                  "X-Member": "ada@example.com", **headers})


# --- which names the endpoint answers ---------------------------------------------------------------
def test_a_rebound_name_is_refused_though_no_middleware_checks_the_host(site: str) -> None:
    port = site.split(":")[2].split("/")[0]
    rebound = call(site, "whoami", Host=f"evil.example:{port}", Origin=f"http://evil.example:{port}")
    assert rebound.status_code == 421 and "settings.ALLOWED_HOSTS" in rebound.text, rebound.text
    assert call(site, "whoami", Host="evil.example").status_code == 421
    foreign = call(site, "whoami", Origin="http://evil.example")
    assert foreign.status_code == 403, foreign.text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):  # the project's own name, and loopback
        own = call(site, "whoami", Host=host, Origin=f"http://{host}")
        assert own.status_code == 200 and own.json()["result"]["content"][0]["text"] == "desk as ada@example.com"


@pytest.mark.parametrize(("settings", "answered", "refused"), [
    ({"MEMBERS_ALLOWED_HOSTS": ".members.example"}, ["members.example", "eu.members.example:8000"],
     ["evil.example", "members.example.evil"]),
    ({"MEMBERS_ALLOWED_HOSTS": "members.example"}, ["members.example", "members.example:9000"],
     ["eu.members.example"]),
    ({"MEMBERS_ALLOWED_HOSTS": "*"}, ["anything.example"], []),
    ({"MEMBERS_MCP_HOSTS": "mcp.members.example"}, ["mcp.members.example", "mcp.members.example:8443"],
     ["members.example"]),
    ({"MEMBERS_DEBUG": "1"}, ["app.localhost"], ["members.example"]),
], ids=["subdomains", "any-port", "any", "endpoint-option", "debug-default"])
def test_the_endpoint_answers_the_names_django_allows_and_its_own(
        settings: dict[str, str], answered: list[str], refused: list[str]) -> None:
    with members_site(**settings) as url:
        for host in answered:
            assert call(url, "whoami", Host=host).status_code == 200, host
            assert call(url, "whoami", Host=host, Origin=f"http://{host}").status_code == 200, host
            assert call(url, "whoami", Host=host, Origin="http://evil.example").status_code == 403, host
        for host in refused:
            assert call(url, "whoami", Host=host).status_code == 421, host


# --- who is calling: principal= ---------------------------------------------------------------------
@ERAS
def test_the_principal_names_the_member_across_requests(site: str, mode: str) -> None:
    def seats(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"seats": 3})

    with member(site, "ada@example.com/phone", mode, elicitation_callback=seats) as ada:
        assert text(ada.call_tool("whoami", {})) == "phone as ada@example.com"
        # A question answered in a second request (2026-07-28), or on the session (legacy), both bound to her.
        assert text(ada.call_tool("book", {})) == "3 seats for ada@example.com"


def test_a_members_devices_share_one_principals_share_of_calls(site: str) -> None:
    with member(site, "ada@example.com/phone") as phone, member(site, "ada@example.com/laptop") as laptop, \
            member(site, "bob@example.com") as bob:
        held = threading.Thread(target=phone.call_tool, args=("hold", {}), daemon=True)
        held.start()

        def laptop_refused() -> bool:
            try:
                laptop.call_tool("whoami", {})
            except MCPError as refusal:
                return "share" in refusal.message or "limit" in refusal.message
            return False

        try:
            assert wait_for(laptop_refused, 10), "ada's second device was not counted against her share"
            assert text(bob.call_tool("whoami", {})) == "desk as bob@example.com"  # another member is served
        finally:
            bob.call_tool("release", {})
            held.join(TIMEOUT)
        assert text(laptop.call_tool("whoami", {})) == "laptop as ada@example.com"


# --- a client that hangs up -------------------------------------------------------------------------
def test_a_quiet_modern_call_is_cancelled_when_its_client_hangs_up(site: str) -> None:
    send_and_hang_up(site, *_as_member(*modern_call("crunch", {"seconds": 20})))

    def last() -> str:
        return str(call(site, "last_crunch", **{"X-Member": "bob@example.com"}).json()["result"]["content"][0]["text"])

    assert wait_for(lambda: last() == "cancelled", 10), f"the call ran on after its client hung up: {last()}"


def _as_member(message: dict[str, Any], headers: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    return message, {**headers, "X-Member": "ada@example.com"}
