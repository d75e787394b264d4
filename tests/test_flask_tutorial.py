"""minimcp on a Flask site in the shape of Flask's tutorial application (``examples/flask_blog.py``),
over real HTTP in both eras and through the real ``flask`` command.

That shape is the one most Flask sites have and ``examples/flask_notes.py`` does not: the database
is a ``sqlite3`` connection kept in ``g`` and closed in ``teardown_appcontext``; the user is a
``sqlite3.Row`` a ``before_request`` hook loads from the session cookie; ``login_required`` is the
site's own (no Flask-Login) and redirects to the login page; the views that write read
``request.form`` and redirect. Also here: what every Flask endpoint owes a browser (DNS-rebinding
protection), route variables that must not reach other routes, and API tokens bound to the site
that issued them.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
from flask import Flask, flash, redirect, render_template_string, request
from pydantic import BaseModel

from conftest import (
    EXAMPLES,
    TIMEOUT,
    load_example,
    modern_headers,
    modern_params,
    request_message,
    server_process,
    wait_for,
)
from host_support import ACCEPT, ERAS, text
from minimcp import Client, MCPError
from minimcp.client.stdio import StdioServerParameters
from minimcp.client.streamable_http import streamable_http_client
from minimcp.flask import MCP
from minimcp.flask.routes import ANYONE, publish_route
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult


class Blog:
    """The tutorial-shaped blog on a loopback port: alice and bob, signed in by the site's own
    login (a session cookie) or by an API token."""

    def __init__(self, module: Any, app: Flask, base: str, database: Path, spec: str, tokens: dict[str, str],
                 ids: dict[str, int]) -> None:
        self.module, self.app, self.base, self.database, self.spec = module, app, base, database, spec
        self.url = base + "/mcp"
        self.tokens = tokens
        self.ids = ids

    def browser(self, name: str) -> requests.Session:
        session = requests.Session()
        signed_in = session.post(self.base + "/auth/login", data={"username": name, "password": name},
                                 timeout=TIMEOUT, allow_redirects=False)
        assert signed_in.status_code == 302, signed_in.text
        return session

    def by_cookie(self, name: str, mode: str, **options: Any) -> Client:
        return Client(streamable_http_client(self.url, http_client=self.browser(name)), mode=mode, **options)

    def by_token(self, name: str, mode: str, **options: Any) -> Client:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {self.tokens[name]}"
        return Client(streamable_http_client(self.url, http_client=http), mode=mode, **options)

    def open_connections(self) -> int:
        """How many sqlite3 connections this process holds open on the blog's database."""
        return sum(1 for fd in Path("/proc/self/fd").iterdir() if _target(fd) == str(self.database))

    def posts(self) -> list[str]:
        with sqlite3.connect(self.database) as db:
            return [row[0] for row in db.execute("SELECT title FROM post ORDER BY id")]


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed while we looked
        return ""


def blog_app(tmp_path: Path, name: str = "blog", secret: str = "staging") -> tuple[Any, Flask, Path, str]:
    """The example on a database of its own in ``tmp_path``, its instance folder ``tmp_path/instance``,
    and the ``flask --app`` that makes the same site in another process."""
    module = load_example("flask_blog")
    database, instance = tmp_path / f"{name}.sqlite3", str(tmp_path / "instance")
    return (module, module.create_app(str(database), instance, secret), database,
            f"flask_blog:create_app({str(database)!r}, {instance!r}, {secret!r})")


def flask_command(spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), *sys.path])}
    return subprocess.run([sys.executable, "-m", "flask", "--app", spec, *args], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


@pytest.fixture
def blog(tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> Blog:
    module, app, database, spec = blog_app(tmp_path)
    # A route published to anyone although the site's login guards it: what a caller it cannot see meets.
    publish_route(app, "create", name="create_unguarded", method="POST", arguments=module.NewPost, allowed=ANYONE)
    with app.app_context():
        ids = {name: module.add_user(name, name) for name in ("alice", "bob")}
        tokens = {name: app.extensions["minimcp"].tokens.create(str(ids[name]), "test") for name in ids}
    return Blog(module, app, serve_wsgi(app), database, spec, tokens, ids)


def confirm(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"sure": True})


def structured(result: Any) -> Any:
    assert not result.is_error, text(result)
    return result.structured_content["result"]


@ERAS
def test_the_example_runs_in_one_command(tmp_path: Path, mode: str) -> None:
    with server_process([sys.executable, str(EXAMPLES / "flask_blog.py"), "--port", "0",
                         "--folder", str(tmp_path)]) as server:
        tokens = dict(re.findall(r"(\w+)'s API token \(shown once\): (\S+)", "".join(server.banner)))
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {tokens['bob']}"
        with Client(streamable_http_client(server.base + "/mcp", http_client=http), mode=mode) as bob:
            assert text(bob.call_tool("whoami", {})) == "bob"
            assert structured(bob.call_tool("my_posts", {})) == []


# --- who is calling: a sqlite3.Row has no stable str() ------------------------------------------------
@ERAS
def test_a_row_user_is_one_caller_across_the_requests_of_a_call(blog: Blog, mode: str) -> None:
    """The user is a ``sqlite3.Row``, loaded again on every request: the caller is its ``"id"``, so
    the legacy session (``notifications/initialized``, the answer to the question) and the
    2026-07-28 ``requestState`` are found again on the requests that follow."""
    with blog.by_cookie("alice", mode, elicitation_callback=confirm) as alice:
        assert text(alice.call_tool("whoami", {})) == "alice"
        alice.call_tool("create", {"title": "first", "body": "hello"})
        assert text(alice.call_tool("delete_my_posts", {})) == "Deleted 1 posts."
    assert blog.posts() == []


class Visitor:
    """A user object with nothing that names it the same way twice (no id, no key)."""

    def __init__(self, name: str) -> None:
        self.name = name


def visitor_site(**options: Any) -> Flask:
    app = Flask("visitors")
    mcp = MCP(app, user=lambda: Visitor(request.headers.get("X-Name", "ann")), **options)

    @mcp.tool()
    def greet(ctx: Context) -> str:
        answer = ctx.elicit("Sure?", schema=ConfirmShape)
        return f"hello {ctx.user.name}, {answer.action}"

    return app


class ConfirmShape(BaseModel):
    sure: bool


@ERAS
def test_a_user_without_a_stable_key_is_refused_at_once_saying_what_to_give(
        serve_wsgi: Callable[[Any], str], mode: str) -> None:
    url = serve_wsgi(visitor_site()) + "/mcp"
    with pytest.raises(MCPError) as refused:
        with Client(url, mode=mode) as client:
            client.call_tool("greet", {})
    assert "principal=lambda user:" in refused.value.message and "get_id(), pk, id" in refused.value.message
    answer = requests.post(url, json=request_message("tools/list", modern_params()), timeout=TIMEOUT,
                           headers={**modern_headers("tools/list"), "Accept": ACCEPT})
    assert answer.status_code == 500 and "test_flask_tutorial.Visitor" in answer.json()["error"]["message"]


@ERAS
def test_principal_names_a_user_that_has_no_key_of_its_own(serve_wsgi: Callable[[Any], str], mode: str) -> None:
    url = serve_wsgi(visitor_site(principal=lambda user: user.name)) + "/mcp"
    with Client(url, mode=mode, elicitation_callback=confirm) as client:
        assert text(client.call_tool("greet", {})) == "hello ann, accept"


# --- where a call runs: a connection in g belongs to its thread ------------------------------------------
@ERAS
def test_tools_with_and_without_ctx_use_a_connection_in_g_opened_on_their_own_thread(blog: Blog, mode: str) -> None:
    """``get_db()`` in a tool opens a connection in the call's own ``g``, on the thread that runs
    it, and ``close_db`` closes it there: a tool with ``ctx`` (a worker in the legacy era), one
    without (the request's thread when nothing streams), and a question asked mid-call."""
    with blog.by_cookie("alice", mode, elicitation_callback=confirm) as alice:
        for title in ("one", "two"):
            alice.call_tool("create", {"title": title, "body": "text"})
        assert structured(alice.call_tool("post_count", {})) == 2
        assert structured(alice.call_tool("my_posts", {})) == ["one", "two"]
        assert text(alice.call_tool("whoami", {})) == "alice"
        assert text(alice.call_tool("delete_my_posts", {})) == "Deleted 2 posts."
        assert structured(alice.call_tool("post_count", {})) == 0
    with blog.by_token("bob", mode) as bob:
        assert structured(bob.call_tool("my_posts", {})) == []
    assert wait_for(lambda: blog.open_connections() == 0), "a connection in g was never closed"


# --- flask mcp ... --user, without Flask-Login --------------------------------------------------------
def test_the_flask_mcp_commands_find_the_user_through_load_user(blog: Blog) -> None:
    inspected = flask_command(blog.spec, "mcp", "inspect", "--user", str(blog.ids["alice"]))
    assert inspected.returncode == 0, inspected.stderr
    assert "my_posts" in inspected.stdout and "delete_my_posts" in inspected.stdout
    called = flask_command(blog.spec, "mcp", "call", "--user", str(blog.ids["bob"]), "whoami")
    assert called.returncode == 0, called.stderr
    assert "bob" in called.stdout
    unknown = flask_command(blog.spec, "mcp", "inspect", "--user", "999")
    assert unknown.returncode != 0 and "no user '999'" in unknown.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), *sys.path])}
    stdio = StdioServerParameters(command=sys.executable, env=env,
                                  args=["-m", "flask", "--app", blog.spec, "mcp", "stdio", "--user", str(blog.ids["alice"])])
    with Client(stdio) as alice:
        assert text(alice.call_tool("whoami", {})) == "alice"  # ctx.user is --user's row, though user= is set


def listed(inspected: str) -> set[str]:
    """The tool names of ``inspect``'s table."""
    section = inspected.split("Tools (", 1)[1].split("\n\n", 1)[0]
    return {line.split()[0] for line in section.splitlines()[2:] if line.strip()}


def test_the_flask_mcp_commands_serve_nobody_without_user(blog: Blog) -> None:
    """Without ``--user`` there is no request, so no hook filled ``g.user`` for ``user=`` to read: the
    caller is nobody, and the tools for anyone are listed and called."""
    inspected = flask_command(blog.spec, "mcp", "inspect")
    assert inspected.returncode == 0, inspected.stderr
    assert {"post_count", "index"} <= listed(inspected.stdout) and "create" not in listed(inspected.stdout)
    called = flask_command(blog.spec, "mcp", "call", "post_count")
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "0"


def test_flask_mcp_user_is_not_offered_the_routes_behind_the_sites_own_login(blog: Blog) -> None:
    """``--user`` signs the user in for minimcp, not in the site's session that the route's
    ``login_required`` reads: the listing leaves out what a call would be refused."""
    inspected = flask_command(blog.spec, "mcp", "inspect", "--user", str(blog.ids["alice"]))
    assert inspected.returncode == 0, inspected.stderr
    names = listed(inspected.stdout)
    assert {"my_posts", "index"} <= names and not {"create", "delete"} & names
    called = flask_command(blog.spec, "mcp", "call", "--user", str(blog.ids["alice"]), "create", "title=x", "body=y")
    assert called.returncode == 2 and "signed in with this site's own login" in called.stderr


# --- form-and-redirect views as tools ---------------------------------------------------------------
@ERAS
def test_a_form_view_gets_form_data_and_its_redirect_after_a_post_is_success(blog: Blog, mode: str) -> None:
    with blog.by_cookie("alice", mode) as alice, blog.by_cookie("bob", mode) as bob:
        assert {"index", "create", "delete"} <= {tool.name for tool in alice.list_tools().tools}
        created = alice.call_tool("create", {"title": "Hello", "body": "First post"})
        assert not created.is_error and text(created) == (
            "POST /create succeeded (302 FOUND); the site then sent the browser to /")
        assert blog.posts() == ["Hello"]
        listing = alice.call_tool("index", {})
        assert "#1 Hello by alice: First post" in text(listing)
        refused = bob.call_tool("delete", {"id": 1})
        assert refused.is_error and "403" in text(refused)
        deleted = alice.call_tool("delete", {"id": 1})
        assert text(deleted) == "POST /1/delete succeeded (302 FOUND); the site then sent the browser to /"
        assert blog.posts() == []


@ERAS
def test_a_route_behind_the_sites_own_login_is_not_offered_to_a_token_caller(blog: Blog, mode: str) -> None:
    """The route's ``login_required`` reads the site's session: an API token's caller never passes
    it, so the route is not listed to them and a call is refused saying why; a route published to
    anyone that redirects such a caller to the login page is a refusal, not a success."""
    with blog.by_token("alice", mode) as alice:
        names = {tool.name for tool in alice.list_tools().tools}
        assert "index" in names and "create" not in names and "delete" not in names
        with pytest.raises(MCPError, match="signed in with this site's own login"):
            alice.call_tool("create", {"title": "x", "body": "y"})
        unguarded = alice.call_tool("create_unguarded", {"title": "x", "body": "y"})
        assert unguarded.is_error
        assert "POST /create redirected to /auth/login, the site's login page" in text(unguarded)
    assert blog.posts() == []


def form_site(tmp_path: Path) -> tuple[Flask, Path]:
    """Posts written by form views that name their fields in their code, as Flask's tutorial does:
    a missing ``request.form["title"]`` is a 400, ``request.form.get("body", "")`` may be left out."""
    app = Flask("form_posts")
    app.secret_key = "form-posts"  # flash() keeps its messages in the session
    database = tmp_path / "posts.sqlite3"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE post (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL)")
    MCP(app)

    @app.route("/create", methods=["GET", "POST"])
    def create() -> Any:
        if request.method == "POST":
            if not request.form["title"]:
                flash("Title is required.")
            else:
                with sqlite3.connect(database) as db:
                    db.execute("INSERT INTO post (title, body) VALUES (?, ?)",
                               (request.form["title"], request.form.get("body", "")))
                return redirect("/")
        return render_template_string('{% for message in get_flashed_messages() %}<div class="flash">{{ message }}'
                                      '</div>{% endfor %}<form method="post"><input name="title"></form>')

    @app.post("/<int:id>/update")
    def update(id: int) -> Any:
        with sqlite3.connect(database) as db:
            db.execute("UPDATE post SET title = ? WHERE id = ?", (request.form["title"], id))
        return redirect("/")

    publish_route(app, "create", method="POST")
    publish_route(app, "update")
    return app, database


@ERAS
def test_a_form_view_asks_for_the_fields_its_code_reads_and_a_flashed_refusal_is_an_error(
        tmp_path: Path, serve_wsgi: Callable[[Any], str], mode: str) -> None:
    app, database = form_site(tmp_path)
    with Client(serve_wsgi(app) + "/mcp", mode=mode) as client:
        schemas = {tool.name: tool.input_schema for tool in client.list_tools().tools}
        assert set(schemas["create"]["properties"]) == {"title", "body"} and schemas["create"]["required"] == ["title"]
        assert set(schemas["update"]["properties"]) == {"id", "title"} and set(schemas["update"]["required"]) == {
            "id", "title"}
        assert not client.call_tool("create", {"title": "Hello", "body": "First"}).is_error
        assert not client.call_tool("create", {"title": "Bare"}).is_error
        assert not client.call_tool("update", {"id": 1, "title": "Hello again"}).is_error
        untitled = client.call_tool("create", {"body": "no title"})
        assert untitled.is_error and "title" in text(untitled)
        refused = client.call_tool("create", {"title": "", "body": "empty title"})  # the form again, with why
        assert refused.is_error and text(refused) == (
            "Error executing tool create: POST /create was not done: the view showed its page again (200 OK) "
            "saying Title is required.")
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT title, body FROM post ORDER BY id").fetchall() == [("Hello again", "First"),
                                                                                     ("Bare", "")]


class Rename(BaseModel):
    name: str


def test_body_says_how_a_view_that_reads_the_form_indirectly_gets_its_arguments(
        serve_wsgi: Callable[[Any], str]) -> None:
    """A view that reads ``request.values`` (as a form library does) is not seen reading the form:
    ``body="form"`` says so, and without it the JSON body leaves the form empty."""
    app = Flask("rename")
    MCP(app)

    @app.post("/rename")
    def rename() -> str:
        return "renamed to " + request.values["name"]

    publish_route(app, "rename", arguments=Rename, body="form")
    publish_route(app, "rename", name="rename_as_json", arguments=Rename)
    with Client(serve_wsgi(app) + "/mcp") as client:
        assert text(client.call_tool("rename", {"name": "Ada"})) == "renamed to Ada"
        as_json = client.call_tool("rename_as_json", {"name": "Ada"})
        assert as_json.is_error and "400" in text(as_json)


# --- route variables stay within their route ----------------------------------------------------------
def notes_site() -> Flask:
    """Notes whose caller is named by the ``Authorization`` header (passed on to a route's request):
    anyone may read their own notes by name, alice alone exports her diary, and a raw dump is
    published to nobody."""
    app = Flask("notes")
    notes = {("alice", "diary"): "alice's secrets", ("bob", "todo"): "milk"}

    def caller() -> str | None:
        scheme, _, name = request.headers.get("Authorization", "").partition(" ")
        return name if scheme == "User" else None

    MCP(app, user=caller)

    @app.get("/notes/<name>")
    def show_note(name: str) -> str:
        return notes.get((caller() or "", name), "no such note")

    @app.get("/notes/diary/export")
    def export_diary() -> str:
        return "EXPORT: " + notes[("alice", "diary")]

    @app.get("/notes/diary/raw")
    def raw_diary() -> str:
        return "RAW: " + notes[("alice", "diary")]

    @app.get("/files/<path:name>")
    def show_file(name: str) -> str:
        return f"file {name}"

    @app.get("/pages/<number>")
    def page(number: int) -> str:  # annotated, though a plain <number> reaches it as text
        return f"page {number}"

    @app.get("/files/secret/key")
    def secret_key() -> str:
        return "the key"

    publish_route(app, "show_note", allowed=ANYONE)
    publish_route(app, "export_diary", allowed=lambda user: user == "alice")
    publish_route(app, "show_file", allowed=ANYONE)
    publish_route(app, "page", allowed=ANYONE)
    return app


@ERAS
def test_a_route_variable_cannot_reach_another_route(serve_wsgi: Callable[[Any], str], mode: str) -> None:
    http = requests.Session()
    http.headers["Authorization"] = "User bob"
    with Client(streamable_http_client(serve_wsgi(notes_site()) + "/mcp", http_client=http), mode=mode) as bob:
        assert "export_diary" not in {tool.name for tool in bob.list_tools().tools}
        assert text(bob.call_tool("show_note", {"name": "todo"})) == "milk"
        for name in ("diary/export", "diary/raw", "../notes/diary/export"):
            escaped = bob.call_tool("show_note", {"name": name})
            assert escaped.is_error and "would leave GET /notes/<name>" in text(escaped), text(escaped)
            assert "secrets" not in text(escaped)
        assert "file docs/a.txt" in text(bob.call_tool("show_file", {"name": "docs/a.txt"}))
        assert text(bob.call_tool("page", {"number": 5})) == "page 5"
        other = bob.call_tool("show_file", {"name": "secret/key"})  # a <path:> too stays on its own rule
        assert other.is_error and "would leave GET /files/<path:name>" in text(other)


# --- DNS rebinding --------------------------------------------------------------------------------------
def open_site(**options: Any) -> Flask:
    """A site with no login: any page that reaches it could run its tools, but for the Host check."""
    app = Flask("open")
    app.config.update(options.pop("config", {}))
    mcp = MCP(app, **options)

    @mcp.tool()
    def ring_bell() -> str:
        return "ding"

    return app


def call_bell(url: str, **headers: str) -> requests.Response:
    params = modern_params({"name": "ring_bell", "arguments": {}})
    return requests.post(url, json=request_message("tools/call", params), timeout=TIMEOUT,
                         headers={**modern_headers("tools/call", params), "Accept": ACCEPT, **headers})


def test_a_rebound_name_cannot_drive_a_site_without_a_login(serve_wsgi: Callable[[Any], str]) -> None:
    url = serve_wsgi(open_site()) + "/mcp"
    port = url.split(":")[2].split("/")[0]
    rebound = call_bell(url, Host=f"evil.example:{port}", Origin=f"http://evil.example:{port}")
    assert rebound.status_code == 421 and "MCP(allowed_hosts=[...])" in rebound.text
    assert call_bell(url, Host=f"evil.example:{port}").status_code == 421
    own = call_bell(url, Origin=f"http://127.0.0.1:{port}")
    assert own.status_code == 200 and own.json()["result"]["content"][0]["text"] == "ding"


@pytest.mark.parametrize("options", [{"allowed_hosts": ["Notes.Example"]}, {"config": {"SERVER_NAME": "notes.example"}},
                                     {"config": {"TRUSTED_HOSTS": ["notes.example"]}}])
def test_a_site_names_the_hosts_it_answers_to(serve_wsgi: Callable[[Any], str], options: dict[str, Any]) -> None:
    url = serve_wsgi(open_site(**options)) + "/mcp"
    port = url.split(":")[2].split("/")[0]
    assert call_bell(url, Host="notes.example", Origin="http://notes.example").status_code == 200
    assert call_bell(url, Host=f"notes.example:{port}").status_code == 200
    assert call_bell(url, Host="notes.example", Origin="http://evil.example").status_code == 403
    assert call_bell(url, Host="evil.example").status_code in (400, 421)  # Flask's own 400 for TRUSTED_HOSTS


# --- API tokens belong to the site that issued them -----------------------------------------------------
def test_a_token_of_one_site_is_nothing_to_another_that_shares_its_instance_folder(
        tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> None:
    """Staging and production started from one folder share ``instance/minimcp-tokens.sqlite3``;
    each has its own SECRET_KEY and database, and user 1 in both."""
    _, staging, _, staging_spec = blog_app(tmp_path, "staging", "staging-key")
    module, production, _, production_spec = blog_app(tmp_path, "production", "production-key")
    for app in (staging, production):
        with app.app_context():
            assert module.add_user("root", "root") == 1
    issued = flask_command(staging_spec, "mcp", "token", "1")
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    with Client(streamable_http_client(serve_wsgi(staging) + "/mcp", http_client=http)) as root:
        assert text(root.call_tool("whoami", {})) == "root"
    refused = http.post(serve_wsgi(production) + "/mcp", json=request_message("tools/list", modern_params()),
                        headers={**modern_headers("tools/list"), "Accept": ACCEPT}, timeout=TIMEOUT)
    assert refused.status_code == 401
    assert flask_command(production_spec, "mcp", "token", "1", "--list").stdout == ""
    assert flask_command(production_spec, "mcp", "token", "1", "--revoke", "1").returncode != 0
    listed = flask_command(staging_spec, "mcp", "token", "1", "--list")
    assert listed.returncode == 0 and token[:8] in listed.stdout
