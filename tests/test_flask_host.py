"""minimcp.flask: the MCP endpoint as part of a Flask application, over real HTTP, in both eras.

Most tests run the README's example site (``examples/flask_notes.py``: Flask-SQLAlchemy on SQLite,
Flask-Login with session cookies and API tokens) on minimcp's HTTP server on a loopback port, as
two users: alice (an admin) and bob. A small application of its own checks what ``request``, ``g``
and the teardown functions mean on the worker thread.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
from flask import Flask, current_app, g, request
from pydantic import BaseModel

from conftest import EXAMPLES, TIMEOUT, final_message, load_example, modern_headers, modern_params, post, request_message
from minimcp import Client, MCPError
from minimcp.client.stdio import StdioServerParameters
from minimcp.client.streamable_http import streamable_http_client
from minimcp.flask import MCP
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])


class Site:
    """The example site on a loopback port, with its users' API tokens."""

    def __init__(self, module: Any, app: Flask, base: str, tokens: dict[str, str]) -> None:
        self.module = module
        self.app = app
        self.base = base
        self.url = base + "/mcp"
        self.tokens = tokens

    def http(self, user: str) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.tokens[user]}"
        return session

    def client(self, user: str, mode: str, **options: Any) -> Client:
        return Client(streamable_http_client(self.url, http_client=self.http(user)), mode=mode, **options)

    def notes(self) -> list[str]:
        with self.app.app_context():
            return [note.text for note in self.module.db.session.scalars(self.module.select(self.module.Note))]


@pytest.fixture
def site(tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> Site:
    module = load_example("flask_notes")
    app = module.create_app(f"sqlite:///{tmp_path / 'notes.db'}")
    with app.app_context():
        tokens = {"alice": module.add_user("alice", admin=True), "bob": module.add_user("bob")}
    return Site(module, app, serve_wsgi(app), tokens)


def answering(confirm: bool) -> Callable[..., ElicitResult]:
    return lambda context, params: ElicitResult(action="accept", content={"confirm": confirm})


def text(result: Any) -> str:
    return result.content[0].text


# --- login ---------------------------------------------------------------------------------------
def test_login_gates_the_endpoint(site: Site) -> None:
    refused = post(site.url, request_message("tools/list", modern_params()), headers=modern_headers("tools/list"))
    assert refused.status_code == 401
    assert "Authentication required" in refused.json()["error"]["message"]
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    wrong = requests.Session()
    wrong.headers["Authorization"] = "Bearer not-a-token"
    with pytest.raises(MCPError, match="Authentication required"):
        with Client(streamable_http_client(site.url, http_client=wrong)) as client:
            client.list_tools()


@ERAS
def test_the_sites_own_cookie_login_works(site: Site, mode: str) -> None:
    browser = requests.Session()
    signed_in = browser.post(site.base + "/login", data={"username": "bob", "password": "bob"}, timeout=TIMEOUT,
                             allow_redirects=False)
    assert signed_in.status_code == 302
    with Client(streamable_http_client(site.url, http_client=browser), mode=mode) as client:
        assert text(client.call_tool("whoami", {})) == "bob"


def test_a_foreign_origin_is_refused(site: Site) -> None:
    answer = site.http("alice").post(site.url, json=request_message("tools/list", modern_params()),
                                     headers={**modern_headers("tools/list"), "Origin": "https://evil.example",
                                              "Accept": "application/json, text/event-stream"}, timeout=TIMEOUT)
    assert answer.status_code == 403


# --- the user and the database -------------------------------------------------------------------
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
    with site.app.app_context():  # every call's db.session went back to the pool when its context ended
        assert site.module.db.engine.pool.checkedout() == 0


@ERAS
@pytest.mark.parametrize("confirm", [True, False])
def test_delete_asks_first(site: Site, mode: str, confirm: bool) -> None:
    seen: list[Any] = []

    def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params.message)
        return answering(confirm)(context, params)

    with site.client("alice", mode, elicitation_callback=callback) as alice:
        note = alice.call_tool("add_note", {"text": "old"}).structured_content["result"]
        answer = text(alice.call_tool("delete_note", {"note_id": note}))
    assert seen == [f"Delete note {note} ('old')?"]
    assert answer == (f"Deleted note {note}." if confirm else "Kept it.")
    assert site.notes() == ([] if confirm else ["old"])


# --- permissions ---------------------------------------------------------------------------------
@ERAS
def test_listing_and_calls_follow_the_users_permission(site: Site, mode: str) -> None:
    with site.client("alice", mode) as alice, site.client("bob", mode) as bob:
        alice.call_tool("add_note", {"text": "mine"})
        assert "all_notes" in [tool.name for tool in alice.list_tools().tools]
        assert "all_notes" not in [tool.name for tool in bob.list_tools().tools]
        assert alice.call_tool("all_notes", {}).structured_content == {"result": ["alice: mine"]}
        with pytest.raises(MCPError, match="Permission denied: tool 'all_notes' requires an admin account"):
            bob.call_tool("all_notes", {})


def test_a_listing_that_depends_on_the_user_is_not_publicly_cacheable(site: Site) -> None:
    response = site.http("bob").post(site.url, json=request_message("tools/list", modern_params()),
                                     headers={**modern_headers("tools/list"), "Accept": "application/json, text/event-stream"},
                                     timeout=TIMEOUT)
    assert response.json()["result"]["cacheScope"] == "private"


# --- one user cannot take over another's conversation --------------------------------------------
def _raw(site: Site, user: str, message: dict[str, Any], **headers: str) -> requests.Response:
    return site.http(user).post(site.url, json=message, timeout=TIMEOUT, stream=True, headers={
        "Accept": "application/json, text/event-stream", **headers})


def test_a_second_user_cannot_use_the_firsts_legacy_session(site: Site) -> None:
    init = _raw(site, "alice", request_message("initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
    session_id = init.headers["Mcp-Session-Id"]
    versions = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
    assert _raw(site, "alice", {"jsonrpc": "2.0", "method": "notifications/initialized"}, **versions).status_code == 202
    stolen = _raw(site, "bob", request_message("tools/call", {"name": "my_notes", "arguments": {}}), **versions)
    assert stolen.status_code == 404
    mine = _raw(site, "alice", request_message("tools/call", {"name": "whoami", "arguments": {}}), **versions)
    assert final_message(mine)["result"]["content"][0]["text"] == "alice"


def test_a_second_user_cannot_replay_the_firsts_request_state(site: Site) -> None:
    with site.client("alice", "auto") as alice:
        note = alice.call_tool("add_note", {"text": "keep me"}).structured_content["result"]
    params = {"name": "delete_note", "arguments": {"note_id": note}}
    capabilities = {"elicitation": {"form": {}}}
    asked = final_message(_raw(site, "alice", request_message("tools/call", modern_params(params, capabilities)),
                               **modern_headers("tools/call", params)))["result"]
    assert asked["resultType"] == "input_required"
    (key,) = asked["inputRequests"]
    retry = {**params, "requestState": asked["requestState"],
             "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}}
    hijack = final_message(_raw(site, "bob", request_message("tools/call", modern_params(retry, capabilities)),
                                **modern_headers("tools/call", params)))
    assert hijack["error"]["code"] == -32602
    assert site.notes() == ["keep me"]
    done = final_message(_raw(site, "alice", request_message("tools/call", modern_params(retry, capabilities)),
                              **modern_headers("tools/call", params)))
    assert done["result"]["content"][0]["text"] == f"Deleted note {note}."


# --- what request, g and teardown mean on the worker ----------------------------------------------
class Go(BaseModel):
    go: bool


class Numbered(requests.auth.AuthBase):
    """Numbers every POST in an ``X-Post`` header, so a tool can tell which one its ``request`` is."""

    def __init__(self) -> None:
        self.count = itertools.count(1)
        self.sent: list[tuple[int, str]] = []

    def __call__(self, prepared: requests.PreparedRequest) -> requests.PreparedRequest:
        number = next(self.count)
        prepared.headers["X-Post"] = str(number)
        body = prepared.body or b"{}"
        self.sent.append((number, requests.models.complexjson.loads(body).get("method", "(answer)")))
        return prepared


def trace_site() -> tuple[Flask, list[tuple[str, Any]]]:
    app = Flask("trace")
    mcp = MCP(app, name="trace")
    torn: list[tuple[str, Any]] = []

    @app.before_request
    def remember() -> None:
        g.post = request.headers.get("X-Post")

    @app.teardown_appcontext
    def down(exc: BaseException | None) -> None:
        torn.append((threading.current_thread().name, g.get("post")))

    @mcp.tool()
    def trace(ctx: Context) -> dict[str, Any]:
        before = request.headers["X-Post"]
        ctx.elicit("Go on?", schema=Go)
        return {"before": before, "after": request.headers["X-Post"], "g": g.post, "app": current_app.name,
                "method": request.get_json()["method"], "path": request.path}

    return app, torn


@ERAS
def test_request_is_the_post_that_carried_the_call(serve_wsgi: Callable[[Any], str], mode: str) -> None:
    app, torn = trace_site()
    url = serve_wsgi(app) + "/mcp"
    numbered = Numbered()
    http = requests.Session()
    http.auth = numbered
    callback = lambda context, params: ElicitResult(action="accept", content={"go": True})  # noqa: E731
    with Client(streamable_http_client(url, http_client=http), mode=mode, elicitation_callback=callback) as client:
        seen = client.call_tool("trace", {}).structured_content
    calls = [number for number, method in numbered.sent if method == "tools/call"]
    assert seen["app"] == "trace" and seen["method"] == "tools/call" and seen["path"] == "/mcp"
    if mode == "legacy":
        # One call, one POST; the answer to the question came on a later POST, yet request stays the first.
        assert calls == [int(seen["before"])] == [int(seen["after"])]
        assert (int(seen["before"]) + 1, "(answer)") in numbered.sent
    else:
        # 2026-07-28: the retry carrying the answer is a new POST, and the tool ran again inside it.
        assert len(calls) == 2 and int(seen["before"]) == int(seen["after"]) == calls[1]
    assert seen["g"] == seen["before"]  # g starts with what the request's before_request put there
    assert ("minimcp-worker", seen["before"]) in torn  # teardown_appcontext ran after the call, on its worker


# --- stdio ---------------------------------------------------------------------------------------
def test_flask_mcp_stdio(tmp_path: Path) -> None:
    module = load_example("flask_notes")
    database = f"sqlite:///{tmp_path / 'notes.db'}"
    app = module.create_app(database)
    with app.app_context():
        module.add_user("alice", admin=True)
        alice = str(module.db.session.scalar(module.select(module.User.id)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), *sys.path])}
    command = [sys.executable, "-m", "flask", "--app", f"flask_notes:create_app({database!r})", "mcp", "stdio"]
    with Client(StdioServerParameters(command=command[0], args=[*command[1:], "--user", alice], env=env)) as client:
        assert text(client.call_tool("whoami", {})) == "alice"
        assert "all_notes" in [tool.name for tool in client.list_tools().tools]
    with Client(StdioServerParameters(command=command[0], args=command[1:], env=env)) as client:
        assert "all_notes" not in [tool.name for tool in client.list_tools().tools]
    refused = subprocess.run([*command, "--user", "999"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert refused.returncode != 0 and "no user with id '999'" in refused.stderr
