"""What both hosts promise, checked on both example sites over real HTTP in both eras: the host's
login gates MCP (and its 401 says how to get in), a tool sees the right user and database, a
delete asks first, listings and calls follow each user's permission, API tokens issued by the
host's command work until revoked, and one user can neither use another's legacy session nor
replay their ``requestState``."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

import pytest
import requests

from conftest import TIMEOUT, final_message, modern_headers, modern_params, request_message
from host_support import ACCEPT, ERAS, DjangoSite, FlaskSite, Site, flask_site, start_site, stop_site, text
from minimcp import Client, MCPError
from minimcp.client.streamable_http import streamable_http_client
from minimcp.hosts.api_tokens import site_digest
from minimcp.hosts.site_auth import digest
from minimcp.types import ElicitResult

REQUIREMENTS = {FlaskSite: "an admin account", DjangoSite: "the permission notes.view_all_notes"}
#: How each host issues API tokens, as its 401 says it.
TOKEN_COMMANDS = {FlaskSite: "'flask mcp token USER'", DjangoSite: "'python manage.py mcp_token USERNAME'"}


def token_command(site: Site, username: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The host's token command for ``username``, in a process of its own, on the site's storage."""
    if isinstance(site, FlaskSite):
        return site.flask("mcp", "token", site.user_id(username), *args)
    assert isinstance(site, DjangoSite)
    return site.manage("mcp_token", username, *args)


def token_rows(site: Site) -> list[Any]:
    """Every stored row of the site's API tokens."""
    if isinstance(site, FlaskSite):
        path = site.app.config.get("MINIMCP_TOKEN_DATABASE") or f"{site.app.instance_path}/minimcp-tokens.sqlite3"
        table = "site_api_token"
    else:
        assert isinstance(site, DjangoSite)
        path, table = str(site.database), "minimcp_apitoken"
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT * FROM {table}").fetchall()


def stored_digest(site: Site, token: str) -> str:
    """What the site keeps of ``token``: a Flask site's digest is keyed with its SECRET_KEY."""
    return site_digest(token, site.app.secret_key.encode()) if isinstance(site, FlaskSite) else digest(token)


def test_login_gates_the_endpoint(site: Site) -> None:
    refused = requests.post(site.url, json=request_message("tools/list", modern_params()), timeout=TIMEOUT,
                            headers={**modern_headers("tools/list"), "Accept": ACCEPT})
    assert refused.status_code == 401
    message = refused.json()["error"]["message"]
    assert message.startswith("Authentication required to use this site's MCP endpoint: ")
    assert "let your MCP client sign you in" in message and TOKEN_COMMANDS[type(site)] in message
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    wrong = requests.Session()
    wrong.headers["Authorization"] = "Bearer not-a-token"
    with pytest.raises(MCPError, match="Authentication required"):
        with Client(streamable_http_client(site.url, http_client=wrong)) as client:
            client.list_tools()
    foreign = site.raw("alice", request_message("tools/list", modern_params()),
                       **modern_headers("tools/list"), Origin="https://evil.example")
    assert foreign.status_code == 403


@ERAS
def test_tools_see_the_right_user_and_the_database(site: Site, mode: str) -> None:
    with site.client("alice", mode) as alice, site.client("bob", mode) as bob:
        assert text(alice.call_tool("whoami", {})) == "alice"
        assert text(bob.call_tool("whoami", {})) == "bob"
        note = alice.call_tool("add_note", {"text": "alice's secret"}).structured_content["result"]
        bob.call_tool("add_note", {"text": "bob's list"})
        assert alice.call_tool("my_notes", {}).structured_content == {"result": [f"{note}: alice's secret"]}
        assert text(bob.call_tool("delete_note", {"note_id": note})) == f"You have no note {note}."
    assert sorted(site.notes()) == ["alice's secret", "bob's list"]


@ERAS
@pytest.mark.parametrize("confirm", [True, False])
def test_delete_asks_first(site: Site, mode: str, confirm: bool) -> None:
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


@ERAS
def test_listing_and_calls_follow_the_users_permission(site: Site, mode: str) -> None:
    requirement = REQUIREMENTS[type(site)]
    with site.client("alice", mode) as alice, site.client("bob", mode) as bob:
        alice.call_tool("add_note", {"text": "mine"})
        assert "all_notes" in [tool.name for tool in alice.list_tools().tools]
        assert "all_notes" not in [tool.name for tool in bob.list_tools().tools]
        assert alice.call_tool("all_notes", {}).structured_content == {"result": ["alice: mine"]}
        with pytest.raises(MCPError) as refused:
            bob.call_tool("all_notes", {})
    # The tool and what it requires, never the user (their name, their object's repr).
    assert refused.value.message == f"Permission denied: tool 'all_notes' requires {requirement}"
    listing = site.raw("bob", request_message("tools/list", modern_params()), **modern_headers("tools/list"))
    assert listing.json()["result"]["cacheScope"] == "private"  # it depends on who asks


def test_sign_in_documents_built_from_the_host_header_are_never_shared(site: Site) -> None:
    """Each host names itself after the request's Host (a loopback one here): a shared cache must
    never keep such a document for others, so it is private and varies with Host."""
    assert isinstance(site, (FlaskSite, DjangoSite))
    port, path = urlsplit(site.base).port, urlsplit(site.url).path
    for document in (f"/.well-known/oauth-protected-resource{path}",
                     f"/.well-known/oauth-authorization-server{path.rstrip('/')}"):
        answer = requests.get(site.base + document, headers={"Host": f"localhost:{port}"}, timeout=TIMEOUT)
        assert answer.status_code == 200, answer.text
        assert f'"http://localhost:{port}/mcp' in answer.text
        assert {part.strip() for part in answer.headers["Cache-Control"].split(",")} == {"private", "max-age=3600"}
        assert "Host" in {name.strip() for name in answer.headers["Vary"].split(",")}


def test_a_second_user_cannot_use_the_firsts_legacy_session(site: Site) -> None:
    init = site.raw("alice", request_message("initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
    versions = {"Mcp-Session-Id": init.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    assert site.raw("alice", {"jsonrpc": "2.0", "method": "notifications/initialized"}, **versions).status_code == 202
    stolen = site.raw("bob", request_message("tools/call", {"name": "my_notes", "arguments": {}}), **versions)
    assert stolen.status_code == 404
    mine = site.raw("alice", request_message("tools/call", {"name": "whoami", "arguments": {}}), **versions)
    assert final_message(mine)["result"]["content"][0]["text"] == "alice"


def test_a_second_user_cannot_replay_the_firsts_request_state(site: Site) -> None:
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


def test_an_api_token_from_the_hosts_command_works_until_revoked(site: Site) -> None:
    issued = token_command(site, "bob", "--label", "bob's laptop")
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    assert token.startswith("mcp_") and len(token) > 40
    site.tokens["bob's laptop"] = token
    with site.client("bob's laptop", "auto") as client:
        assert text(client.call_tool("whoami", {})) == "bob"
    rows = token_rows(site)
    assert not any(token in str(row) for row in rows) and any(stored_digest(site, token) in row for row in rows)

    listed = token_command(site, "bob", "--list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2 and token not in listed.stdout  # the demo token and this one, by hint only
    (laptop,) = [line for line in lines if "bob's laptop" in line]
    number, hint = laptop.split("\t")[:2]
    assert hint == token[:8] + "\u2026" and "never used" not in laptop  # it was just used
    assert token_command(site, "alice", "--revoke", number).returncode != 0  # not alice's token

    revoked = token_command(site, "bob", "--revoke", number)
    assert revoked.returncode == 0, revoked.stderr
    refused = site.raw("bob's laptop", request_message("tools/list", modern_params()), **modern_headers("tools/list"))
    assert refused.status_code == 401
    with site.client("bob", "auto") as client:  # bob's other token still works
        assert text(client.call_tool("whoami", {})) == "bob"
    assert len(token_command(site, "bob", "--list").stdout.splitlines()) == 1
    unknown = token_command(site, "bob", "--revoke", number)
    assert unknown.returncode != 0 and f"no token {number}" in unknown.stderr


# --- tasks: each body runs as its own caller --------------------------------------------------------
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(params=["flask", "django"])
def one_task_worker(request: pytest.FixtureRequest, tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> Iterator[Site]:
    """Each example site with a single task worker, so every body after the first waits for it."""
    if request.param == "flask":
        flask = flask_site(tmp_path, serve_wsgi)
        flask.module.mcp.tasks.max_running = 1
        yield flask
        return
    django = start_site(tmp_path, NOTES_MAX_TASK_WORKERS="1")
    try:
        yield django
    finally:
        stop_site(django)


def _start_task(site: Site, user: str, arguments: dict[str, Any]) -> str:
    params = {"name": "wait_for_note", "arguments": arguments}
    answer = final_message(site.raw(user, request_message("tools/call", modern_params(params, TASKS)),
                                    **modern_headers("tools/call", params)))
    assert answer["result"]["resultType"] == "task", answer
    return answer["result"]["taskId"]  # type: ignore[no-any-return]


def _finished(site: Site, user: str, task_id: str) -> dict[str, Any]:
    """``tasks/get`` as ``user`` until the task leaves ``working`` (bounded by the wait)."""
    params = {"taskId": task_id}
    answer: dict[str, Any] = {}
    pause = threading.Event()
    for _ in range(int(TIMEOUT / 0.05)):
        answer = final_message(site.raw(user, request_message("tasks/get", modern_params(params, TASKS)),
                                        **modern_headers("tasks/get", params)))["result"]
        if answer["status"] != "working":
            return answer
        pause.wait(0.05)
    raise AssertionError(f"task {task_id} still working: {answer}")


def test_a_queued_task_runs_as_the_user_who_started_it(one_task_worker: Site) -> None:
    site = one_task_worker
    with site.client("bob", "auto") as bob:
        bob.call_tool("add_note", {"text": "bob's list"})
    # Alice's body holds the only task worker until she adds the note it waits for.
    held = _start_task(site, "alice", {"text": "go ahead"})
    queued = [(user, _start_task(site, user, {"text": "list", "seconds": 0})) for user in ("bob", "alice", "bob")]
    with site.client("alice", "auto") as alice:
        alice.call_tool("add_note", {"text": "go ahead"})
    assert _finished(site, "alice", held)["result"]["content"][0]["text"] == "alice has a note with 'go ahead'."
    outcomes = {"bob": "bob has a note with 'list'.", "alice": "alice has no note with 'list' yet."}
    for user, task_id in queued:
        assert _finished(site, user, task_id)["result"]["content"][0]["text"] == outcomes[user]


BEARER_OPTION_PROGRAMS = {
    "flask": "from flask import Flask\nfrom minimcp.flask import MCP\nMCP(Flask('site'), {option})",
    "django": ("from django.conf import settings\nsettings.configure(INSTALLED_APPS=['django.contrib.auth', "
               "'django.contrib.contenttypes'])\nimport django\ndjango.setup()\nfrom minimcp.django import MCP\n"
               "MCP({option})"),
}
BEARER_OPTIONS = {
    "auth": ("auth=AuthSettings(issuer_url='https://as.example', resource_server_url='https://rs.example/mcp')",
             "from minimcp.server.auth.settings import AuthSettings\n"),
    "token_verifier": ("token_verifier=object()", ""),
}


@pytest.mark.parametrize("host", sorted(BEARER_OPTION_PROGRAMS))
@pytest.mark.parametrize("option", sorted(BEARER_OPTIONS))
def test_a_hosted_server_refuses_a_bearer_check_it_would_not_run(host: str, option: str) -> None:
    """The host's login says who calls a hosted endpoint; an auth= it would ignore is refused at once."""
    argument, imports = BEARER_OPTIONS[option]
    program = imports + BEARER_OPTION_PROGRAMS[host].format(option=argument)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"TypeError: MCP takes no {option}: a hosted endpoint's callers are the site's users" in done.stderr
    assert "MCPServer(auth=...)" in done.stderr
