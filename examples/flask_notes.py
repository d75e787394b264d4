"""A Flask + Flask-SQLAlchemy + Flask-Login notes site whose MCP tools act as the signed-in user.

Run it with ``python examples/flask_notes.py``: it creates ``flask_notes.db`` (SQLite) beside this
file with two users, alice (an admin) and bob, prints each one's API token once, and serves
``http://127.0.0.1:5000/``. Paste ``http://127.0.0.1:5000/mcp`` into an MCP client: it sends you to
the site's login page (password = user name) and then asks you to allow it (``oauth=True``). Or
send the header ``Authorization: Bearer <API token>``; ``flask --app flask_notes mcp token 1``
(from this folder) issues another for user 1, ``--list`` and ``--revoke N`` manage them. Tools see
``current_user`` and ``db.session``; ``delete_note`` asks before it deletes (in both protocol eras)
and ``all_notes`` is for admins only.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, redirect, request
from flask.typing import ResponseReturnValue
from flask_login import LoginManager, UserMixin, current_user, login_user
from flask_sqlalchemy import SQLAlchemy
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, select
from sqlalchemy.orm import Mapped, mapped_column
from werkzeug.security import check_password_hash, generate_password_hash

from minimcp.flask import MCP
from minimcp.server.mcpserver import Context

db = SQLAlchemy()
login_manager = LoginManager()
login_manager.login_view = "login"
mcp = MCP(name="Notes", oauth=True)


class User(UserMixin, db.Model):  # type: ignore[name-defined]
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(unique=True)
    password_hash: Mapped[str]
    is_admin: Mapped[bool] = mapped_column(default=False)

    def __str__(self) -> str:
        return self.username


class Note(db.Model):  # type: ignore[name-defined]
    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    text: Mapped[str]


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    return db.session.get(User, int(user_id))


# --- the MCP tools -------------------------------------------------------------------------------
class Confirm(BaseModel):
    confirm: bool = Field(description="Delete this note for good?")


@mcp.tool()
def whoami() -> str:
    """The signed-in user's name."""
    return current_user.username


@mcp.tool()
def my_notes() -> list[str]:
    """The signed-in user's notes, as "id: text"."""
    notes = db.session.scalars(select(Note).where(Note.owner_id == current_user.id).order_by(Note.id))
    return [f"{note.id}: {note.text}" for note in notes]


@mcp.tool()
def add_note(text: str) -> int:
    """Add a note; returns its id."""
    note = Note(owner_id=current_user.id, text=text)
    db.session.add(note)
    db.session.commit()
    return note.id


@mcp.tool()
def delete_note(note_id: int, ctx: Context) -> str:
    """Delete one of your notes, after asking you to confirm."""
    note = db.session.get(Note, note_id)
    if note is None or note.owner_id != current_user.id:
        return f"You have no note {note_id}."
    answer = ctx.elicit(f"Delete note {note_id} ({note.text!r})?", schema=Confirm)
    if answer.action != "accept" or not answer.data.confirm:
        return "Kept it."
    db.session.delete(note)
    db.session.commit()
    return f"Deleted note {note_id}."


@mcp.tool(task=True)
def wait_for_note(text: str, ctx: Context, seconds: float = 60.0) -> str:
    """Run as a task: wait (up to ``seconds``, at most ten minutes) until you have a note containing ``text``."""
    deadline = time.monotonic() + min(seconds, 600.0)
    while True:
        db.session.rollback()  # each look reads the table as it is now
        if db.session.scalar(select(Note.id).where(Note.owner_id == current_user.id, Note.text.contains(text))):
            return f"{current_user.username} has a note with {text!r}."
        if ctx.cancelled or time.monotonic() >= deadline:
            return f"{current_user.username} has no note with {text!r} yet."
        time.sleep(0.1)


@mcp.tool(allowed=lambda user: user.is_admin, requirement="an admin account")  # never asked about nobody
def all_notes() -> list[str]:
    """Every user's notes (admins only)."""
    rows = db.session.execute(select(User.username, Note.text).join(Note, Note.owner_id == User.id).order_by(Note.id))
    return [f"{name}: {text}" for name, text in rows]


# --- the site ------------------------------------------------------------------------------------
LOGIN_PAGE = """<!doctype html><title>Sign in</title><h1>Sign in to Notes</h1><p>{error}</p>
<form method="post"><label>User name <input name="username" id="username"></label>
<label>Password <input name="password" id="password" type="password"></label><button>Sign in</button></form>"""


def _local(target: str | None) -> str:
    """Where to go after signing in: a path on this site, never another site (an open redirect).

    A browser reads ``//host``, ``/\\host`` and ``/<TAB>/host`` (it drops tabs and newlines) as
    another host, so only a plain path with none of those passes."""
    if (not target or not target.startswith("/") or target.startswith("//") or "\\" in target
            or not target.isprintable() or any(char.isspace() for char in target)):
        return "/"
    parts = urlsplit(target)
    return "/" if parts.scheme or parts.netloc else target


def create_app(database_uri: str | None = None, instance_path: str | None = None) -> Flask:
    """The site on ``database_uri``; its API tokens live in ``instance_path`` (default: ``instance/``
    beside this file)."""
    app = Flask(__name__, instance_path=instance_path)
    app.config["SECRET_KEY"] = _kept_secret(Path(app.instance_path) / "secret_key")
    app.config.from_prefixed_env()  # FLASK_SECRET_KEY=... in the environment: a deployment's own key
    app.config["SQLALCHEMY_DATABASE_URI"] = database_uri or f"sqlite:///{Path(__file__).with_suffix('.db')}"
    db.init_app(app)
    login_manager.init_app(app)
    mcp.init_app(app)

    @app.get("/")
    def index() -> str:
        who = current_user.username if current_user.is_authenticated else "nobody"
        return f"Signed in as {who}. MCP endpoint: {request.host_url}mcp"

    @app.route("/login", methods=["GET", "POST"])
    def login() -> ResponseReturnValue:
        if request.method == "POST":
            user = db.session.scalar(select(User).where(User.username == request.form.get("username", "")))
            if user is not None and check_password_hash(user.password_hash, request.form.get("password", "")):
                login_user(user)
                return redirect(_local(request.args.get("next")))
            return LOGIN_PAGE.format(error="Wrong user name or password."), 401
        return LOGIN_PAGE.format(error="")

    with app.app_context():
        db.create_all()
    return app


def _kept_secret(path: Path) -> str:
    """The site's secret key, made on its first start and kept in its instance folder: sessions and
    API tokens (bound to the key) outlive a restart, and ``flask mcp token`` signs with the same."""
    path.parent.mkdir(parents=True, exist_ok=True)
    made = path.with_name(f".{path.name}.{os.getpid()}")
    made.write_text(secrets.token_hex(32))
    try:
        os.link(made, path)  # whole or not at all: a process starting alongside reads one key or the other
    except FileExistsError:
        pass
    finally:
        made.unlink()
    return path.read_text()


def add_user(username: str, *, admin: bool = False) -> str:
    """Create a user whose password is its name; return its API token (only its digest is stored)."""
    user = User(username=username, password_hash=generate_password_hash(username), is_admin=admin)
    db.session.add(user)
    db.session.commit()
    return mcp.tokens.create(user.get_id(), "demo")


if __name__ == "__main__":
    app = create_app()
    with app.app_context():
        if db.session.scalar(select(User).limit(1)) is None:
            for name, admin in (("alice", True), ("bob", False)):
                print(f"{name}'s API token (shown once): {add_user(name, admin=admin)}")
    app.run("127.0.0.1", 5000, threaded=True)
