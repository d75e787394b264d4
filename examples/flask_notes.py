"""A Flask + Flask-SQLAlchemy + Flask-Login notes site whose MCP tools act as the signed-in user.

Run it with ``python examples/flask_notes.py``: it creates ``flask_notes.db`` (SQLite) beside this
file with two users, alice (an admin) and bob, prints each one's API token once, and serves
``http://127.0.0.1:5000/``. Paste ``http://127.0.0.1:5000/mcp`` into an MCP client: it sends you to
the site's login page (password = user name) and then asks you to allow it (``oauth=True``). Or
send the header ``Authorization: Bearer <API token>``. Tools see ``current_user`` and ``db.session``; ``delete_note`` asks before it deletes (in
both protocol eras) and ``all_notes`` is for admins only.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from pathlib import Path

from flask import Flask, redirect, request
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


class User(UserMixin, db.Model):  # type: ignore[name-defined,misc]
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(unique=True)
    password_hash: Mapped[str]
    is_admin: Mapped[bool] = mapped_column(default=False)
    token_digest: Mapped[str | None] = mapped_column(unique=True)

    def __str__(self) -> str:
        return self.username


class Note(db.Model):  # type: ignore[name-defined,misc]
    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    text: Mapped[str]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    return db.session.get(User, int(user_id))


@login_manager.request_loader
def load_user_from_token(req: object) -> User | None:
    """``Authorization: Bearer <token>``: an MCP client's way in, beside the browser's cookie."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return None
    return db.session.scalar(select(User).where(User.token_digest == digest(token.strip())))


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


@mcp.tool(allowed=lambda user: user is not None and user.is_admin, requirement="an admin account")
def all_notes() -> list[str]:
    """Every user's notes (admins only)."""
    rows = db.session.execute(select(User.username, Note.text).join(Note, Note.owner_id == User.id).order_by(Note.id))
    return [f"{name}: {text}" for name, text in rows]


# --- the site ------------------------------------------------------------------------------------
LOGIN_PAGE = """<!doctype html><title>Sign in</title><h1>Sign in to Notes</h1><p>{error}</p>
<form method="post"><label>User name <input name="username" id="username"></label>
<label>Password <input name="password" id="password" type="password"></label><button>Sign in</button></form>"""


def _local(target: str | None) -> str:
    """Where to go after signing in: a path on this site, never another site (an open redirect)."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


def create_app(database_uri: str | None = None) -> Flask:
    app = Flask(__name__)
    app.config["SECRET_KEY"] = secrets.token_hex(16)
    app.config["SQLALCHEMY_DATABASE_URI"] = database_uri or f"sqlite:///{Path(__file__).with_suffix('.db')}"
    db.init_app(app)
    login_manager.init_app(app)
    mcp.init_app(app)

    @app.get("/")
    def index() -> str:
        who = current_user.username if current_user.is_authenticated else "nobody"
        return f"Signed in as {who}. MCP endpoint: {request.host_url}mcp"

    @app.route("/login", methods=["GET", "POST"])
    def login() -> object:
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


def add_user(username: str, *, admin: bool = False) -> str:
    """Create a user whose password is its name; return its API token (only its digest is stored)."""
    token = secrets.token_urlsafe(32)
    db.session.add(User(username=username, password_hash=generate_password_hash(username), is_admin=admin,
                        token_digest=digest(token)))
    db.session.commit()
    return token


if __name__ == "__main__":
    app = create_app()
    with app.app_context():
        if db.session.scalar(select(User).limit(1)) is None:
            for name, admin in (("alice", True), ("bob", False)):
                print(f"{name}'s API token (shown once): {add_user(name, admin=admin)}")
    app.run("127.0.0.1", 5000, threaded=True)
