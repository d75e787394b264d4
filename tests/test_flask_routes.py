"""``minimcp.flask.routes.publish_route``: a Flask application's existing routes as MCP tools, each
call a real request through the application as the MCP caller.

The application is ``examples/flask_library.py`` (Flask-SQLAlchemy on a fresh SQLite file,
Flask-Login with API tokens): lin is a librarian, rae a reader. It is served on a loopback port and
reached over HTTP, in both eras; the example's own command runs in a process of its own.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
from flask import Flask

from conftest import EXAMPLES, load_example, server_process
from host_support import ERAS, text
from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.jsonrpc import MCPError


class Library:
    def __init__(self, module: Any, app: Flask, url: str, tokens: dict[str, str]) -> None:
        self.module, self.app, self.url, self.tokens = module, app, url, tokens

    def client(self, user: str, mode: str = "auto") -> Client:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {self.tokens[user]}"
        return Client(streamable_http_client(self.url, http_client=http), mode=mode)


@pytest.fixture
def library(tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> Library:
    module = load_example("flask_library")
    app = module.create_app(f"sqlite:///{tmp_path / 'library.db'}")
    with app.app_context():
        tokens = {"lin": module.add_user("lin", librarian=True), "rae": module.add_user("rae")}
        module.db.session.add_all([module.Book(title="Middlemarch", author="George Eliot"),
                                   module.Book(title="Beloved", author="Toni Morrison")])
        module.db.session.commit()
    return Library(module, app, serve_wsgi(app) + "/mcp", tokens)


def answer(result: Any) -> Any:
    assert not result.is_error, text(result)
    return json.loads(text(result))


@ERAS
def test_routes_become_tools_with_arguments_from_converters_and_models(library: Library, mode: str) -> None:
    with library.client("lin", mode) as client:
        tools = {tool.name: tool for tool in client.list_tools().tools}
        assert set(tools) == {"list_books", "show_book", "add_book", "borrow", "my_loans"}
        assert tools["show_book"].input_schema["properties"]["book_id"]["type"] == "integer"
        assert tools["show_book"].input_schema["required"] == ["book_id"]
        assert tools["show_book"].description == "GET /books/<int:book_id>: One book."
        assert tools["add_book"].input_schema["required"] == ["title", "author"]
        assert tools["list_books"].input_schema["properties"]["q"]["description"] == (
            "Text to look for in titles and authors")
        assert [b["title"] for b in answer(client.call_tool("list_books", {"q": "eliot"}))] == ["Middlemarch"]
        added = answer(client.call_tool("add_book", {"title": f"Kindred ({mode})", "author": "Octavia Butler"}))
        assert answer(client.call_tool("show_book", {"book_id": added["id"]}))["title"] == f"Kindred ({mode})"
        wrong = client.call_tool("show_book", {"book_id": "three"})
        assert wrong.is_error and "book_id" in text(wrong)


@ERAS
def test_a_call_runs_as_the_calling_user_through_login_required(library: Library, mode: str) -> None:
    with library.client("rae", mode) as rae, library.client("lin", mode) as lin:
        assert answer(rae.call_tool("borrow", {"book_id": 2}))["on_loan"] is True
        assert answer(rae.call_tool("my_loans", {})) == {"reader": "rae", "books": ["Beloved"]}
        assert answer(lin.call_tool("my_loans", {})) == {"reader": "lin", "books": []}
        taken = lin.call_tool("borrow", {"book_id": 2})
        assert taken.is_error
        assert "POST /books/2/borrow answered 409 CONFLICT" in text(taken) and "Beloved is on loan" in text(taken)


def test_error_handlers_and_before_request_hooks_apply(library: Library) -> None:
    with library.client("rae") as client:
        missing = client.call_tool("show_book", {"book_id": 99})
        assert missing.is_error and 'GET /books/99 answered 404 NOT FOUND: {"error":"No book 99"}' in text(missing)
        library.app.config["STOCKTAKING"] = True
        closed = client.call_tool("borrow", {"book_id": 1})
        assert closed.is_error and "503" in text(closed) and "Closed for stocktaking" in text(closed)
        assert answer(client.call_tool("show_book", {"book_id": 1}))["title"] == "Middlemarch"  # GET still served
        library.app.config["STOCKTAKING"] = False
        assert not client.call_tool("borrow", {"book_id": 1}).is_error


def test_a_tool_limited_to_some_users_is_hidden_from_the_others_and_refused(library: Library) -> None:
    with library.client("rae") as client:
        assert "add_book" not in {tool.name for tool in client.list_tools().tools}
        with pytest.raises(MCPError, match="requires a librarian account$"):
            client.call_tool("add_book", {"title": "Mine", "author": "Me"})


def test_publishing_a_route_it_cannot_use_says_what_to_do(library: Library) -> None:
    from minimcp.flask.routes import publish_route

    app = Flask("bare")

    @app.route("/both", methods=["GET", "POST"])
    def both() -> str:
        return "ok"

    with pytest.raises(RuntimeError, match=r"call MCP\(app\)"):
        publish_route(app, "both")
    library.module.MCP(app)
    with pytest.raises(ValueError, match=r"answers \['GET', 'POST'\]: say which with publish_route\(..., method="):
        publish_route(app, both)
    with pytest.raises(ValueError, match="No route of bare serves 'nowhere'"):
        publish_route(app, "nowhere")
    assert publish_route(app, both, method="post", name="post_both") == "post_both"


@ERAS
def test_an_anonymous_caller_sees_only_the_routes_opened_to_anyone(serve_wsgi: Callable[[Any], str],
                                                                   mode: str) -> None:
    from flask_login import LoginManager, login_required

    from minimcp.flask import MCP
    from minimcp.flask.routes import ANYONE, publish_route

    app = Flask("open")
    app.config["SECRET_KEY"] = "test"
    manager = LoginManager(app)
    manager.login_view = "sign_in"
    manager.user_loader(lambda user_id: None)

    @app.get("/hours")
    def hours() -> dict[str, str]:
        return {"open": "9-17"}

    @app.get("/account")
    @login_required
    def account() -> str:
        return "private"

    @app.get("/sign-in")
    def sign_in() -> str:
        return "sign in here"

    MCP(app, login_required=False)
    publish_route(app, "hours", allowed=ANYONE)
    publish_route(app, "account")
    publish_route(app, "account", name="account_anyway", allowed=ANYONE)
    with Client(serve_wsgi(app) + "/mcp", mode=mode) as client:
        assert {tool.name for tool in client.list_tools().tools} == {"hours", "account_anyway"}
        assert answer(client.call_tool("hours", {})) == {"open": "9-17"}
        with pytest.raises(MCPError, match="requires a signed-in user; sign in first"):
            client.call_tool("account", {})
        redirected = client.call_tool("account_anyway", {})
        assert redirected.is_error and "GET /account redirected to /sign-in?next=" in text(redirected)


@ERAS
def test_the_example_runs_in_one_command(tmp_path: Path, mode: str) -> None:
    command = [sys.executable, str(EXAMPLES / "flask_library.py"), "--port", "0",
               "--database", f"sqlite:///{tmp_path / 'library.db'}"]
    with server_process(command) as server:
        tokens = dict(re.findall(r"(\w+)'s API token \(shown once\): (\S+)", "".join(server.banner)))
        site = Library(None, Flask("unused"), f"{server.base}/mcp", tokens)
        with site.client("rae", mode) as client:
            assert "add_book" not in {tool.name for tool in client.list_tools().tools}
            assert answer(client.call_tool("my_loans", {})) == {"reader": "rae", "books": []}


@ERAS
def test_the_official_client_lists_and_calls_the_route_tools(library: Library, mode: str) -> None:
    import anyio
    import httpx2
    import mcp as official
    from mcp.client.streamable_http import streamable_http_client as official_http

    async def main() -> tuple[set[str], str]:
        headers = {"Authorization": f"Bearer {library.tokens['rae']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                official.Client(official_http(library.url, http_client=http), mode=mode) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            borrowed = await client.call_tool("borrow", {"book_id": 1})
            return names, borrowed.content[0].text

    names, borrowed = anyio.run(main)
    assert names == {"list_books", "show_book", "borrow", "my_loans"}
    assert json.loads(borrowed) == {"id": 1, "title": "Middlemarch", "author": "George Eliot", "on_loan": True}
