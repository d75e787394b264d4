"""minimcp.flask: the MCP endpoint as part of a Flask application, over real HTTP, in both eras.

What both hosts promise is checked in ``test_host_sites.py``; here is what only Flask has: its
cookie login, Flask-SQLAlchemy's sessions going back to the pool, what ``request``, ``g`` and the
teardown functions mean on the worker thread (a small application of its own), and
``flask mcp stdio``.
"""

from __future__ import annotations

import itertools
import os
import runpy
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
from flask import Flask, current_app, g, request
from pydantic import BaseModel

from conftest import EXAMPLES, TIMEOUT, docs_source, load_example
from host_support import ERAS, FlaskSite, flask_site, text
from minimcp import Client, MCPError
from minimcp.client.stdio import StdioServerParameters
from minimcp.client.streamable_http import streamable_http_client
from minimcp.hosts.api_tokens import digest, issue
from minimcp.flask import MCP
from minimcp.flask.tokens import TokenInfo
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
    database, instance = f"sqlite:///{tmp_path / 'notes.db'}", str(tmp_path / "instance")
    app = module.create_app(database, instance)
    with app.app_context():
        module.add_user("alice", admin=True)
        alice = str(module.db.session.scalar(module.select(module.User.id)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), *sys.path])}
    command = [sys.executable, "-m", "flask", "--app", f"flask_notes:create_app({database!r}, {instance!r})", "mcp",
               "stdio"]
    with Client(StdioServerParameters(command=command[0], args=[*command[1:], "--user", alice], env=env)) as client:
        assert text(client.call_tool("whoami", {})) == "alice"
        assert "all_notes" in [tool.name for tool in client.list_tools().tools]
    with Client(StdioServerParameters(command=command[0], args=command[1:], env=env)) as client:
        assert "all_notes" not in [tool.name for tool in client.list_tools().tools]
    refused = subprocess.run([*command, "--user", "999"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert refused.returncode != 0 and "no user with id '999'" in refused.stderr


# --- the documented app, with and without a user ---------------------------------------------------
def test_the_documented_app_over_stdio_denies_nobody_and_names_no_user(tmp_path: Path) -> None:
    """``allowed=lambda user: user.is_admin`` as docs/topics/flask.md prints it (docs_src/topics/
    flask_notes.py, user 1 an admin and user 2 not): with no ``--user`` the tool is hidden and
    refused (its rule is never asked about nobody), and a refusal names the tool and its
    requirement, not the user."""
    (tmp_path / "flask_notes.py").write_text(docs_source("topics/flask_notes.py"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}

    def stdio(*args: str) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, env=env, cwd=str(tmp_path),
                                     args=["-m", "flask", "--app", "flask_notes", "mcp", "stdio", *args])

    with Client(stdio()) as nobody:
        assert [tool.name for tool in nobody.list_tools().tools] == ["my_notes"]
        with pytest.raises(MCPError) as refused:
            nobody.call_tool("all_notes", {})
        assert refused.value.message == "Permission denied: tool 'all_notes' requires an admin account; sign in first"
    with Client(stdio("--user", "2")) as user:
        assert [tool.name for tool in user.list_tools().tools] == ["my_notes"]
        with pytest.raises(MCPError) as refused:
            user.call_tool("all_notes", {})
        assert refused.value.message == "Permission denied: tool 'all_notes' requires an admin account"
    with Client(stdio("--user", "1")) as admin:
        assert [tool.name for tool in admin.list_tools().tools] == ["my_notes", "all_notes"]


# --- the example's login page -------------------------------------------------------------------------
@pytest.mark.parametrize("target", [
    "/%09/attacker/", "/%0a/attacker/", "/%0d%0a/attacker/", "//attacker/", "/%5Cattacker/", "/%5C/attacker/",
    "/x%5C..%5C%5Cattacker", "https://attacker/", "javascript:alert(1)", "%20//attacker/", "/%00/attacker/",
    "attacker/", ""])
def test_login_sends_the_browser_only_to_a_path_of_this_site(site: FlaskSite, target: str) -> None:
    signed_in = requests.post(f"{site.base}/login?next={target}", data={"username": "bob", "password": "bob"},
                              timeout=TIMEOUT, allow_redirects=False)
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == "/"


def test_login_sends_the_browser_back_to_the_page_it_came_from(site: FlaskSite) -> None:
    target = "/mcp/consent?request=abc.def"
    signed_in = requests.post(f"{site.base}/login", params={"next": target}, timeout=TIMEOUT, allow_redirects=False,
                              data={"username": "bob", "password": "bob"})
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == target


# --- the sign-in documents and the Host header -------------------------------------------------------
DOCUMENTS = ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server/mcp")


def _cache_control(response: requests.Response) -> set[str]:
    return {part.strip() for part in response.headers["Cache-Control"].split(",")}


# (Without SERVER_NAME the documents follow the Host header: test_host_sites checks that they stay private.)


@pytest.mark.parametrize("host, reason", [("notes.example", "needs HTTPS"), ("a b", "names no host")])
def test_a_public_name_over_plain_http_gets_a_clear_400_not_a_500(site: FlaskSite, host: str, reason: str) -> None:
    for path in DOCUMENTS:
        answer = requests.get(site.base + path, headers={"Host": host}, timeout=TIMEOUT)
        assert answer.status_code == 400 and reason in answer.text
    endpoint = requests.post(site.url, json={}, headers={"Host": host}, timeout=TIMEOUT)
    assert endpoint.status_code == 421 and "MCP(allowed_hosts=[...])" in endpoint.text  # a name it was not given
    with site.client("alice", "auto") as alice:  # and the site keeps serving
        assert text(alice.call_tool("whoami", {})) == "alice"


def test_with_server_name_the_documents_name_the_site_whatever_the_host(serve_wsgi: Callable[[Any], str]) -> None:
    app = Flask("named")
    app.config.update(SECRET_KEY="test", SERVER_NAME="notes.example.com", PREFERRED_URL_SCHEME="https")
    MCP(app, oauth=True, user=lambda: None, load_user=lambda user_id: None, login_url="/login")
    base = serve_wsgi(app)
    for host in ("evil.example", "127.0.0.1"):
        prm = requests.get(base + DOCUMENTS[0], headers={"Host": host}, timeout=TIMEOUT)
        assert prm.status_code == 200 and prm.json()["resource"] == "https://notes.example.com/mcp"
        assert prm.json()["authorization_servers"] == ["https://notes.example.com/mcp"]
        assert _cache_control(prm) == {"public", "max-age=3600"}
    for host in ("notes.example.com", "127.0.0.1"):  # the endpoint answers the site's own names only
        challenge = requests.post(base + "/mcp", json={}, headers={"Host": host}, timeout=TIMEOUT)
        assert challenge.headers["WWW-Authenticate"] == (
            'Bearer resource_metadata="https://notes.example.com/.well-known/oauth-protected-resource/mcp"')
    assert requests.post(base + "/mcp", json={}, headers={"Host": "evil.example"}, timeout=TIMEOUT).status_code == 421


# --- what the 401 offers -------------------------------------------------------------------------------
def test_the_401_offers_only_what_the_site_can_issue(serve_wsgi: Callable[[Any], str]) -> None:
    """A site whose users come from a rule of its own cannot turn a token back into a user: no API
    tokens are offered (nor taken), and no sign-in through the client without ``oauth=True``."""
    app = Flask("plain")
    MCP(app, user=lambda: None)
    answer = requests.post(serve_wsgi(app) + "/mcp", json={}, headers={"Authorization": "Bearer mcp_x"},
                           timeout=TIMEOUT)
    assert answer.status_code == 401
    assert answer.json()["error"]["message"] == (
        "Authentication required to use this site's MCP endpoint: sign in to this site")


# --- API tokens on a site of its own making -------------------------------------------------------------
TOKENS_APP = '''
from flask import Flask
from minimcp.flask import MCP

USERS = {"carol", "dave"}  # a user is their name here: load_user takes it back
app = Flask("tokens")
app.secret_key = "tokens-site"
app.config["MINIMCP_TOKEN_DATABASE"] = __file__.removesuffix(".py") + "-tokens.sqlite3"
mcp = MCP(app, user=lambda: None, load_user=lambda name: name if name in USERS else None)


@mcp.tool()
def whoami() -> str:
    return str(mcp.host_user())
'''


def test_tokens_live_where_the_config_says_and_serve_a_site_without_flask_login(
        tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> None:
    program = tmp_path / "tokens_site.py"
    program.write_text(TOKENS_APP)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    issued = subprocess.run([sys.executable, "-m", "flask", "--app", "tokens_site", "mcp", "token", "carol"], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert issued.returncode == 0, issued.stderr
    assert (tmp_path / "tokens_site-tokens.sqlite3").exists() and not (tmp_path / "instance").exists()
    url = serve_wsgi(runpy.run_path(str(program))["app"]) + "/mcp"
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {issued.stdout.strip()}"
    with Client(streamable_http_client(url, http_client=http)) as carol:
        assert text(carol.call_tool("whoami", {})) == "carol"
    refused = requests.post(url, json={}, headers={"Authorization": "Bearer mcp_not-issued"}, timeout=TIMEOUT)
    assert refused.status_code == 401 and "'flask mcp token USER'" in refused.json()["error"]["message"]
    nobody = subprocess.run([sys.executable, "-m", "flask", "--app", "tokens_site", "mcp", "token", "erin"], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert nobody.returncode != 0 and "no user with id 'erin'" in nobody.stderr


class MemoryTokens:
    """A token store of the site's own (the ``TokenStore`` methods), as one over a shared database
    would be: digests only, here in a dictionary."""

    def __init__(self) -> None:
        self.rows: dict[int, TokenInfo] = {}
        self.digests: dict[str, int] = {}

    def create(self, user_id: str, label: str) -> str:
        token = issue()
        number = len(self.rows) + 1
        self.rows[number] = TokenInfo(number, user_id, label, token.hint, time.time(), None)
        self.digests[token.digest] = number
        return token.secret

    def tokens(self, user_id: str) -> list[TokenInfo]:
        return [info for info in self.rows.values() if info.user_id == user_id]

    def revoke(self, user_id: str, number: int) -> bool:
        found = self.rows.get(number)
        if found is None or found.user_id != user_id:
            return False
        del self.rows[number]
        return True

    def user_id_for(self, token: str) -> str | None:
        found = self.rows.get(self.digests.get(digest(token), 0))
        return None if found is None else found.user_id


def test_a_token_store_of_the_sites_own_decides_whose_token_it_is(serve_wsgi: Callable[[Any], str]) -> None:
    app = Flask("own-store")
    store = MemoryTokens()
    mcp = MCP(app, user=lambda: None, load_user=lambda name: name, token_store=store)

    @mcp.tool()
    def whoami() -> str:
        return str(mcp.host_user())

    with app.app_context():
        token = mcp.tokens.create("dave", "laptop")
    url = serve_wsgi(app) + "/mcp"
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    with Client(streamable_http_client(url, http_client=http)) as dave:
        assert text(dave.call_tool("whoami", {})) == "dave"
    assert store.revoke("dave", 1)
    assert requests.post(url, json={}, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT).status_code == 401


def test_a_call_in_process_is_held_to_the_tools_rule_as_a_served_one_is(site: FlaskSite) -> None:
    """``mcp.call_tool(...)`` in the application's own code (no request, so no user) meets the same
    rule as a call over HTTP: a limited tool is refused, naming its requirement."""
    with site.app.app_context():
        with pytest.raises(MCPError) as refused:
            site.module.mcp.call_tool("all_notes", {})
    assert refused.value.message == "Permission denied: tool 'all_notes' requires an admin account; sign in first"
    assert refused.value.data == {"tool": "all_notes", "requires": "an admin account"}
