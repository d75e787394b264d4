"""minimcp.django: the MCP endpoint inside a real Django project, over real HTTP, in both eras.

Each test runs the README's example project (``examples/django_notes``: a notes model, the admin,
API tokens) in a subprocess of its own (``manage.py demo``, on minimcp's HTTP server on a loopback
port) with a fresh SQLite database, as alice (a superuser) and bob (a plain user).
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import EXAMPLES, TIMEOUT, final_message, modern_headers, modern_params, request_message
from host_support import (
    ERAS,
    Site,
    check_delete_asks_first,
    check_legacy_session_is_the_users,
    check_login_gate,
    check_permissions,
    check_request_state_is_the_users,
    check_user_and_database,
    text,
)
from minimcp import Client
from minimcp.client.stdio import StdioServerParameters

PROJECT = EXAMPLES / "django_notes"
ROOT = Path(__file__).resolve().parents[1]


def project_env(database: Path, **settings: str) -> dict[str, str]:
    return {**os.environ, "NOTES_DATABASE": str(database), "PYTHONPATH": os.pathsep.join([str(ROOT), str(PROJECT)]),
            **settings}


class DjangoSite(Site):
    def __init__(self, process: subprocess.Popen[str], base: str, tokens: dict[str, str], database: Path) -> None:
        super().__init__(base + "/mcp/", tokens, self._notes)
        self.process = process
        self.base = base
        self.database = database

    def _notes(self) -> list[str]:
        with sqlite3.connect(self.database) as db:
            return [row[0] for row in db.execute("SELECT text FROM notes_note ORDER BY id")]

    def open_connections(self) -> int:
        """How many SQLite connections the server process holds open on its database file right now."""
        fds = Path(f"/proc/{self.process.pid}/fd")
        return sum(1 for fd in fds.iterdir() if _target(fd) == str(self.database))


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed while we looked
        return ""


def start_site(tmp_path: Path, **settings: str) -> DjangoSite:
    database = tmp_path / "notes.sqlite3"
    process = subprocess.Popen([sys.executable, "manage.py", "demo", "--port", "0"], cwd=PROJECT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=project_env(database, **settings))
    assert process.stdout is not None
    tokens: dict[str, str] = {}
    lines: list[str] = []
    for line in process.stdout:  # the demo prints the tokens, then where it serves
        lines.append(line)
        token = re.match(r"(\w+)'s API token \(shown once\): (\S+)", line)
        if token:
            tokens[token[1]] = token[2]
        serving = re.match(r"Serving (http://\S+)/ ", line)
        if serving:
            return DjangoSite(process, serving[1], tokens, database)
    process.wait(TIMEOUT)
    raise AssertionError("the example project did not start:\n" + "".join(lines))


def stop_site(site: DjangoSite) -> None:
    site.process.terminate()
    site.process.wait(TIMEOUT)
    assert site.process.stdout is not None
    site.process.stdout.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[DjangoSite]:
    started = start_site(tmp_path)
    yield started
    stop_site(started)


def test_login_gates_the_endpoint(site: DjangoSite) -> None:
    check_login_gate(site)


@ERAS
def test_tools_see_the_right_user_and_the_database(site: DjangoSite, mode: str) -> None:
    check_user_and_database(site, mode)


@ERAS
@pytest.mark.parametrize("confirm", [True, False])
def test_delete_asks_first(site: DjangoSite, mode: str, confirm: bool) -> None:
    check_delete_asks_first(site, mode, confirm)


@ERAS
def test_permission_required_filters_the_listing_and_refuses_calls(site: DjangoSite, mode: str) -> None:
    check_permissions(site, mode, "the permission notes.view_all_notes")


def test_a_second_user_cannot_use_the_firsts_legacy_session(site: DjangoSite) -> None:
    check_legacy_session_is_the_users(site)


def test_a_second_user_cannot_replay_the_firsts_request_state(site: DjangoSite) -> None:
    check_request_state_is_the_users(site)


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
    saved = browser.post(add, timeout=TIMEOUT, data={
        "user": bob[1], "name": "bob's assistant", "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    token = re.search(r"The new token is (mcp_[\w-]+)", saved.text)
    assert token is not None, saved.text
    site.tokens["bob (admin)"] = token[1]
    with site.client("bob (admin)", "auto") as client:
        assert text(client.call_tool("whoami", {})) == "bob"
    listing = browser.get(site.base + "/admin/minimcp/apitoken/", timeout=TIMEOUT).text
    assert "bob&#x27;s assistant" in listing and token[1] not in listing and token[1][:8] in listing
    with sqlite3.connect(site.database) as db:
        stored = [row for row in db.execute("SELECT * FROM minimcp_apitoken")]
    assert len(stored) == 3 and not any(token[1] in str(row) for row in stored)


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
    site = start_site(tmp_path, NOTES_CONN_MAX_AGE=conn_max_age, NOTES_MAX_WORKERS="4")
    try:
        _many_calls(site, 1000, 4)
        held = site.open_connections()
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
                                           "['add_note', 'delete_note', 'my_notes', 'whoami']\n"]  # all_notes: not for nobody

