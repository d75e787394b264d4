"""A blog in the shape of Flask's tutorial application, offered to MCP clients as it is.

The site keeps its ``sqlite3`` connection in ``g`` (``get_db``) and closes it in
``teardown_appcontext``; a ``before_request`` hook loads the signed-in user, a ``sqlite3.Row``, into
``g.user``; ``login_required`` sends a visitor without one to ``/auth/login``; the views that write
read ``request.form`` and redirect. None of it changes for MCP:

- ``MCP(app, user=lambda: g.user, load_user=...)``: the row's ``"id"`` names the caller, and
  ``flask mcp token ID`` issues API tokens that ``load_user`` turns back into the row;
- tools call ``get_db()`` and read ``g.user`` as views do: each call has a ``g`` of its own, filled
  by the site's hooks on the thread that runs it, and its connection is closed there;
- ``publish_route`` makes the form views tools: their fields go as form data, the redirect after a
  post is the success it is for a browser, and a caller the route's login cannot see (one signed
  in by an API token) is not offered them.

Run ``python examples/flask_blog.py`` (users alice/alice and bob/bob; it prints their API tokens).
"""

from __future__ import annotations

import argparse
import functools
import os
import secrets
import sqlite3
import tempfile
from typing import Any, Callable

from flask import Flask, abort, current_app, g, redirect, request, session, url_for
from pydantic import BaseModel, Field
from werkzeug.security import check_password_hash, generate_password_hash

from minimcp.flask import MCP
from minimcp.flask.routes import ANYONE, publish_route
from minimcp.server.mcpserver import Context

SCHEMA = """
CREATE TABLE IF NOT EXISTS user (id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT UNIQUE NOT NULL,
                                 password TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS post (id INTEGER PRIMARY KEY AUTOINCREMENT, author_id INTEGER NOT NULL,
                                 title TEXT NOT NULL, body TEXT NOT NULL, FOREIGN KEY (author_id) REFERENCES user (id));
"""


def get_db() -> sqlite3.Connection:
    """The request's connection, opened on first use; ``close_db`` closes it when the context ends."""
    if "db" not in g:
        g.db = sqlite3.connect(current_app.config["DATABASE"])
        g.db.row_factory = sqlite3.Row
    return g.db


def close_db(exc: BaseException | None = None) -> None:
    db = g.pop("db", None)
    if db is not None:
        db.close()


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(view)
    def wrapped(**kwargs: Any) -> Any:
        if g.user is None:
            return redirect(url_for("auth.login"))
        return view(**kwargs)

    return wrapped


class NewPost(BaseModel):
    title: str = Field(description="The post's title")
    body: str = Field(description="What it says")


class Confirm(BaseModel):
    sure: bool


def create_app(database: str, instance: str | None = None, secret_key: str = "dev") -> Flask:
    app = Flask(__name__, instance_path=instance)
    app.config.update(SECRET_KEY=secret_key, DATABASE=database)
    app.teardown_appcontext(close_db)
    with app.app_context():
        get_db().executescript(SCHEMA)

    @app.before_request
    def load_logged_in_user() -> None:
        user_id = session.get("user_id")
        g.user = None if user_id is None else get_db().execute("SELECT * FROM user WHERE id = ?",
                                                               (user_id,)).fetchone()

    @app.route("/auth/login", methods=["GET", "POST"], endpoint="auth.login")
    def login() -> Any:
        if request.method == "POST":
            user = get_db().execute("SELECT * FROM user WHERE username = ?", (request.form["username"],)).fetchone()
            if user is None or not check_password_hash(user["password"], request.form["password"]):
                return "Incorrect username or password.", 400
            session.clear()
            session["user_id"] = user["id"]
            return redirect(url_for("index"))
        return '<form method="post"><input name="username"><input name="password" type="password"></form>'

    @app.get("/")
    def index() -> str:
        """Every post, newest first."""
        posts = get_db().execute("SELECT p.id, title, body, username FROM post p JOIN user u ON p.author_id = u.id "
                                 "ORDER BY p.id DESC").fetchall()
        return "\n".join(f"#{post['id']} {post['title']} by {post['username']}: {post['body']}" for post in posts)

    @app.route("/create", methods=["GET", "POST"])
    @login_required
    def create() -> Any:
        """Write a new post."""
        if request.method == "POST":
            db = get_db()
            db.execute("INSERT INTO post (title, body, author_id) VALUES (?, ?, ?)",
                       (request.form["title"], request.form["body"], g.user["id"]))
            db.commit()
            return redirect(url_for("index"))
        return '<form method="post"><input name="title"><textarea name="body"></textarea></form>'

    @app.post("/<int:id>/delete")
    @login_required
    def delete(id: int) -> Any:
        """Delete one of your posts."""
        post = get_db().execute("SELECT author_id FROM post WHERE id = ?", (id,)).fetchone()
        if post is None:
            abort(404, f"Post id {id} doesn't exist.")
        if post["author_id"] != g.user["id"]:
            abort(403)
        get_db().execute("DELETE FROM post WHERE id = ?", (id,))
        get_db().commit()
        return redirect(url_for("index"))

    mcp = MCP(app, name="blog", user=lambda: g.user,
              load_user=lambda user_id: get_db().execute("SELECT * FROM user WHERE id = ?", (user_id,)).fetchone())

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        """Who this call runs as."""
        return str(ctx.user["username"])

    @mcp.tool()
    def post_count() -> int:
        """How many posts the blog has."""
        return int(get_db().execute("SELECT COUNT(*) FROM post").fetchone()[0])

    @mcp.tool()
    def my_posts(ctx: Context) -> list[str]:
        """The titles of your posts."""
        rows = get_db().execute("SELECT title FROM post WHERE author_id = ? ORDER BY id", (ctx.user["id"],))
        return [row["title"] for row in rows]

    @mcp.tool()
    def delete_my_posts(ctx: Context) -> str:
        """Delete all your posts, once you confirm."""
        answer = ctx.elicit(f"Delete all posts of {ctx.user['username']}?", schema=Confirm)
        if answer.action != "accept" or not answer.data.sure:
            return "Nothing deleted."
        db = get_db()
        deleted = db.execute("DELETE FROM post WHERE author_id = ?", (ctx.user["id"],)).rowcount
        db.commit()
        return f"Deleted {deleted} posts."

    publish_route(app, "index", allowed=ANYONE)
    publish_route(app, "create", method="POST", arguments=NewPost)
    publish_route(app, "delete")
    return app


def add_user(username: str, password: str) -> int:
    """A user of the site (in an app context); their id."""
    db = get_db()
    user_id = db.execute("INSERT INTO user (username, password) VALUES (?, ?)",
                         (username, generate_password_hash(password))).lastrowid
    db.commit()
    assert user_id is not None
    return user_id


if __name__ == "__main__":
    from minimcp.httpd import WSGIServer

    parser = argparse.ArgumentParser(description="The tutorial-shaped blog, its views and tools over MCP.")
    parser.add_argument("--port", type=int, default=5002, help="0 picks a free port")
    parser.add_argument("--folder", default=None, help="where its database and instance folder go (default: a new "
                                                       "temporary folder)")
    options = parser.parse_args()
    folder = options.folder or tempfile.mkdtemp(prefix="flask-blog-")
    site = create_app(os.path.join(folder, "blog.sqlite3"), os.path.join(folder, "instance"), secrets.token_hex(16))
    with site.app_context():
        for name in ("alice", "bob"):
            token = site.extensions["minimcp"].tokens.create(str(add_user(name, name)), "example")
            print(f"{name}'s API token (shown once): {token}")
    server = WSGIServer(site, "127.0.0.1", options.port)
    print(f"Serving http://127.0.0.1:{server.port}/ (MCP: /mcp)", flush=True)
    server.run()
