"""minimcp.django: the MCP endpoint inside a real Django project, over real HTTP, in both eras.

What both hosts promise is checked in ``test_host_sites.py``; here is what only Django has: its
session login, API tokens issued in the admin, database connection hygiene over 1,000 calls,
``manage.py mcp_stdio`` and the ``MINIMCP`` settings. Each test runs the example project
(``examples/django_notes``) in a subprocess of its own with a fresh SQLite database.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import TIMEOUT, final_message, modern_headers, modern_params, request_message
from host_support import ERAS, PROJECT, DjangoSite, project_env, start_site, stop_site, text
from minimcp import Client, MCPError
from minimcp.client.stdio import StdioServerParameters


@pytest.fixture
def site(tmp_path: Path) -> Iterator[DjangoSite]:
    started = start_site(tmp_path)
    yield started
    stop_site(started)


def _admin_login(site: DjangoSite, user: str) -> requests.Session:
    browser = requests.Session()
    browser.get(site.base + "/admin/login/", timeout=TIMEOUT)
    signed_in = browser.post(site.base + "/admin/login/", timeout=TIMEOUT, allow_redirects=False, data={
        "username": user, "password": user, "csrfmiddlewaretoken": browser.cookies["csrftoken"], "next": "/admin/"})
    assert signed_in.status_code == 302, signed_in.text
    return browser


@ERAS
def test_the_sites_own_session_login_works(site: DjangoSite, mode: str) -> None:
    from minimcp.client.streamable_http import streamable_http_client

    browser = _admin_login(site, "alice")
    with Client(streamable_http_client(site.url, http_client=browser), mode=mode) as client:
        assert text(client.call_tool("whoami", {})) == "alice"


def test_a_token_issued_in_the_admin_is_shown_once_and_stored_hashed(site: DjangoSite) -> None:
    browser = _admin_login(site, "alice")
    add = site.base + "/admin/minimcp/apitoken/add/"
    form = browser.get(add, timeout=TIMEOUT)
    bob = re.search(r'<option value="(\d+)">bob</option>', form.text)
    assert bob is not None, form.text
    saved = browser.post(add, timeout=TIMEOUT, allow_redirects=False, data={
        "user": bob[1], "name": "bob's assistant", "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    # shown on the page that answers the save, never in a message (the messages framework keeps
    # them in a cookie, readable by whatever sees the cookie), and never cached
    token = re.search(r"The new token is <code[^>]*>(mcp_[\w-]+)</code>", saved.text)
    assert saved.status_code == 200 and token is not None, saved.text
    assert "no-store" in saved.headers["Cache-Control"]
    assert "messages" not in saved.cookies and "messages" not in browser.cookies
    site.tokens["bob (admin)"] = token[1]
    with site.client("bob (admin)", "auto") as client:
        assert text(client.call_tool("whoami", {})) == "bob"
    listing = browser.get(site.base + "/admin/minimcp/apitoken/", timeout=TIMEOUT).text
    assert "bob&#x27;s assistant" in listing and token[1] not in listing and token[1][:8] in listing
    with sqlite3.connect(site.database) as db:
        stored = [row for row in db.execute("SELECT * FROM minimcp_apitoken")]
    assert len(stored) == 3 and not any(token[1] in str(row) for row in stored)


def test_a_client_given_the_url_without_the_slash_is_led_to_the_sign_in(site: DjangoSite) -> None:
    """``/mcp``: not APPEND_SLASH's redirect, which a POST cannot follow, but the endpoint's own 401,
    whose challenge names the sign-in documents; they are the slashed endpoint's, as before."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    refused = requests.post(site.base + "/mcp", json=ping, timeout=TIMEOUT, allow_redirects=False,
                            headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401
    metadata = re.search(r'resource_metadata="([^"]+)"', refused.headers["WWW-Authenticate"])
    assert metadata is not None, refused.headers
    document = requests.get(metadata[1], timeout=TIMEOUT).json()
    assert document["resource"] == site.base + "/mcp/"
    from minimcp.client.streamable_http import streamable_http_client

    for url in (site.base + "/mcp", site.base + "/mcp/"):
        with Client(streamable_http_client(url, http_client=site.http("bob")), mode="legacy") as client:
            assert text(client.call_tool("whoami", {})) == "bob"


# --- database connection hygiene -------------------------------------------------------------------
def _many_calls(site: DjangoSite, calls: int, threads: int) -> None:
    """``calls`` tool calls that each touch the database, from ``threads`` clients at once."""
    params = {"name": "my_notes", "arguments": {}}
    failures: list[Any] = []

    def run(count: int) -> None:
        http = site.http("alice")
        for _ in range(count):
            response = http.post(site.url, json=request_message("tools/call", modern_params(params)), timeout=TIMEOUT,
                                 headers={**modern_headers("tools/call", params), "Accept": "application/json, text/event-stream"})
            answer = final_message(response)
            if "result" not in answer or answer["result"].get("isError"):
                failures.append(answer)

    workers = [threading.Thread(target=run, args=(calls // threads,)) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    assert not failures, failures[:3]


@pytest.mark.parametrize("conn_max_age, bound", [("0", 0), ("600", 4 + 2 * 4)])
def test_a_thousand_calls_leave_open_connections_bounded(tmp_path: Path, conn_max_age: str, bound: int) -> None:
    """CONN_MAX_AGE=0 closes each worker's connection after its call. Persistent connections stay,
    at most one per thread: the 4 MCP workers and the HTTP server's request threads (started on
    demand for 4 clients; allow twice that), however many calls ran."""
    # One user's four clients may hold all four workers: the call share is the whole pool here.
    site = start_site(tmp_path, NOTES_CONN_MAX_AGE=conn_max_age, NOTES_MAX_WORKERS="4",
                      NOTES_MAX_CALLS_PER_PRINCIPAL="4")
    try:
        _many_calls(site, 1000, 4)
        # A request thread closes its connection when Django finishes the response, just after the
        # client has read it: wait (bounded) for the last ones to settle.
        deadline = time.monotonic() + 10
        while (held := site.open_connections()) > bound and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held <= bound
        assert held <= len(list(Path(f"/proc/{site.process.pid}/task").iterdir())) - 1  # never two on one thread
        if conn_max_age != "0":
            assert held > 0  # persistent connections are kept, as the project asked
    finally:
        stop_site(site)


# --- stdio ---------------------------------------------------------------------------------------
def test_manage_py_mcp_stdio(site: DjangoSite) -> None:
    env = project_env(site.database, DJANGO_SETTINGS_MODULE="notesite.settings")
    command = [str(PROJECT / "manage.py"), "mcp_stdio"]

    def stdio(*args: str) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=[*command, *args], env=env, cwd=str(PROJECT))

    with Client(stdio("--user", "alice")) as client:
        assert text(client.call_tool("whoami", {})) == "alice"
        assert "all_notes" in [tool.name for tool in client.list_tools().tools]
    with Client(stdio("--user", "bob")) as client:
        assert "all_notes" not in [tool.name for tool in client.list_tools().tools]
    with Client(stdio()) as nobody:  # the documented permission_required tool, with no user: denied, never a crash
        assert "all_notes" not in [tool.name for tool in nobody.list_tools().tools]
        with pytest.raises(MCPError) as refused:
            nobody.call_tool("all_notes", {})
        assert refused.value.message == (
            "Permission denied: tool 'all_notes' requires the permission notes.view_all_notes; sign in first")
    refused = subprocess.run([sys.executable, *command, "--user", "nobody"], env=env, cwd=PROJECT,
                             capture_output=True, text=True, timeout=TIMEOUT)
    assert refused.returncode != 0 and "No user named 'nobody'" in refused.stderr


def test_settings_reach_the_server(tmp_path: Path) -> None:
    env = project_env(tmp_path / "x.sqlite3", NOTES_MAX_WORKERS="3", DJANGO_SETTINGS_MODULE="notesite.settings")
    shown = subprocess.run([sys.executable, "-c",
                            "import django; django.setup(); from minimcp.django import mcp; print(mcp.name, mcp.pool.max_workers, mcp.login_required,"
                            " sorted(t.name for t in mcp.list_tools()))"],
                           cwd=PROJECT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert shown.stdout.split(None, 3) == ["Notes", "3", "True",
                                           "['add_note', 'delete_note', 'my_notes', 'wait_for_note', 'whoami']\n"]  # all_notes: not for nobody

