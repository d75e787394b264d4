"""minimcp.flask: the MCP endpoint as part of a Flask application, over real HTTP, in both eras.

What both hosts promise is checked in ``test_host_sites.py``; here is what only Flask has: its
cookie login, Flask-SQLAlchemy's sessions going back to the pool, what ``request``, ``g`` and the
teardown functions mean on the worker thread (a small application of its own), and
``flask mcp stdio``.
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

from conftest import EXAMPLES, TIMEOUT, load_example
from host_support import ERAS, FlaskSite, flask_site, text
from minimcp import Client
from minimcp.client.stdio import StdioServerParameters
from minimcp.client.streamable_http import streamable_http_client
from minimcp.flask import MCP
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult


@pytest.fixture
def site(tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> FlaskSite:
    return flask_site(tmp_path, serve_wsgi)


@ERAS
def test_the_sites_own_cookie_login_works(site: FlaskSite, mode: str) -> None:
    browser = requests.Session()
    signed_in = browser.post(site.base + "/login", data={"username": "bob", "password": "bob"}, timeout=TIMEOUT,
                             allow_redirects=False)
    assert signed_in.status_code == 302
    with Client(streamable_http_client(site.url, http_client=browser), mode=mode) as client:
        assert text(client.call_tool("whoami", {})) == "bob"


@ERAS
def test_every_calls_database_session_goes_back_to_the_pool(site: FlaskSite, mode: str) -> None:
    with site.client("alice", mode) as alice:
        for n in range(5):
            alice.call_tool("add_note", {"text": f"note {n}"})
        assert len(alice.call_tool("my_notes", {}).structured_content["result"]) == 5
    with site.app.app_context():  # teardown_appcontext removed each call's db.session
        assert site.module.db.engine.pool.checkedout() == 0


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
                "method": request.get_json()["method"], "path": request.path,
                "thread": threading.current_thread().name}

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
    # teardown_appcontext ran after the call, on the thread that ran it: a worker, or for a 2026-07-28
    # call that streams nothing, the thread that received the POST.
    assert seen["thread"] == ("minimcp-worker" if mode == "legacy" else "minimcp-httpd")
    assert (seen["thread"], seen["before"]) in torn


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
