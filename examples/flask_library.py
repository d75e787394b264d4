"""A Flask + Flask-SQLAlchemy + Flask-Login lending library whose existing routes are MCP tools.

Run it with ``python examples/flask_library.py [--port 0]``: it creates ``flask_library.db``
(SQLite) beside this file with a librarian, lin, and a reader, rae, prints each one's API token, and
serves ``http://127.0.0.1:5001/``. An MCP client sends ``Authorization: Bearer <API token>`` to
``/mcp``. The tools are the site's own JSON routes (``publish_route``): each call runs through
Flask as that user, so ``login_required``, the ``before_request`` stocktaking check and the JSON
error handlers apply; only a librarian sees ``add_book``.
"""

from __future__ import annotations

import argparse
import hashlib
import secrets
from pathlib import Path
from typing import Any

from flask import Flask, abort, jsonify, request
from flask_login import LoginManager, UserMixin, current_user, login_required
from flask_sqlalchemy import SQLAlchemy
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, select
from sqlalchemy.orm import Mapped, mapped_column
from werkzeug.exceptions import HTTPException

from minimcp.flask import MCP
from minimcp.flask.routes import publish_route

db = SQLAlchemy()
login_manager = LoginManager()


class User(UserMixin, db.Model):  # type: ignore[name-defined]
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(unique=True)
    is_librarian: Mapped[bool] = mapped_column(default=False)
    token_digest: Mapped[str] = mapped_column(unique=True)

    def __str__(self) -> str:
        return self.username


class Book(db.Model):  # type: ignore[name-defined]
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str]
    author: Mapped[str]
    borrower_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "author": self.author, "on_loan": self.borrower_id is not None}


class Search(BaseModel):
    q: str | None = Field(default=None, description="Text to look for in titles and authors")


class NewBook(BaseModel):
    title: str = Field(min_length=1, description="The book's title")
    author: str = Field(min_length=1, description="Who wrote it")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


login_manager.user_loader(lambda user_id: db.session.get(User, int(user_id)))


@login_manager.request_loader
def token_holder(req: Any) -> User | None:
    """The user whose API token the request carries (``Authorization: Bearer ...``), if any."""
    token = req.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return db.session.scalar(select(User).filter_by(token_digest=digest(token))) if token else None


def add_user(username: str, librarian: bool = False) -> str:
    """Create a user; their API token (shown once, stored as a digest)."""
    token = secrets.token_urlsafe(24)
    db.session.add(User(username=username, is_librarian=librarian, token_digest=digest(token)))
    db.session.commit()
    return token


def create_app(database_uri: str | None = None) -> Flask:
    app = Flask(__name__)
    app.config["SECRET_KEY"] = secrets.token_hex(16)
    app.config["SQLALCHEMY_DATABASE_URI"] = database_uri or f"sqlite:///{Path(__file__).with_suffix('.db')}"
    app.config["STOCKTAKING"] = False
    db.init_app(app)
    login_manager.init_app(app)

    @app.before_request
    def closed_for_stocktaking() -> Any:
        if app.config["STOCKTAKING"] and request.path.startswith("/books") and request.method != "GET":
            return jsonify(error="Closed for stocktaking: lending resumes tomorrow"), 503
        return None

    @app.errorhandler(HTTPException)
    def as_json(error: HTTPException) -> Any:
        return jsonify(error=error.description), error.code

    @app.get("/books")
    def list_books() -> Any:
        """The catalogue, or the books matching q."""
        rows = select(Book).order_by(Book.title)
        if request.args.get("q"):
            pattern = f"%{request.args['q']}%"
            rows = rows.where(Book.title.ilike(pattern) | Book.author.ilike(pattern))
        return jsonify([book.to_dict() for book in db.session.scalars(rows)])

    @app.get("/books/<int:book_id>")
    def show_book(book_id: int) -> Any:
        """One book."""
        return jsonify(db.get_or_404(Book, book_id, description=f"No book {book_id}").to_dict())

    @app.post("/books")
    @login_required
    def add_book() -> Any:
        """Add a book to the catalogue (librarians only)."""
        if not current_user.is_librarian:
            abort(403, "Only librarians add books")
        data = request.get_json(silent=True) or {}
        book = Book(title=data.get("title", ""), author=data.get("author", ""))
        db.session.add(book)
        db.session.commit()
        return jsonify(book.to_dict()), 201

    @app.post("/books/<int:book_id>/borrow")
    @login_required
    def borrow(book_id: int) -> Any:
        """Borrow a book as the signed-in reader."""
        book = db.get_or_404(Book, book_id, description=f"No book {book_id}")
        if book.borrower_id is not None:
            abort(409, f"{book.title} is on loan")
        book.borrower_id = current_user.id
        db.session.commit()
        return jsonify(book.to_dict())

    @app.get("/me/loans")
    @login_required
    def my_loans() -> Any:
        """The books the signed-in reader has borrowed."""
        books = db.session.scalars(select(Book).where(Book.borrower_id == current_user.id).order_by(Book.title))
        return jsonify({"reader": current_user.username, "books": [book.title for book in books]})

    with app.app_context():
        db.create_all()
    MCP(app, name="Library")
    publish_route(app, "list_books", arguments=Search)
    publish_route(app, "show_book")
    publish_route(app, "add_book", arguments=NewBook, allowed=lambda user: user is not None and user.is_librarian,
                  requirement="a librarian account")
    publish_route(app, "borrow")
    publish_route(app, "my_loans")
    return app


if __name__ == "__main__":
    from minimcp.httpd import WSGIServer

    parser = argparse.ArgumentParser(description="The lending library site, its routes as MCP tools.")
    parser.add_argument("--port", type=int, default=5001, help="0 picks a free port")
    parser.add_argument("--database", default=None, help="an SQLAlchemy URL (default: flask_library.db here)")
    options = parser.parse_args()
    site = create_app(options.database)
    with site.app_context():
        if db.session.scalar(select(User)) is None:
            for name, librarian in (("lin", True), ("rae", False)):
                print(f"{name}'s API token (shown once): {add_user(name, librarian)}")
            db.session.add_all([Book(title="Middlemarch", author="George Eliot"),
                                Book(title="Beloved", author="Toni Morrison")])
            db.session.commit()
    server = WSGIServer(site, "127.0.0.1", options.port)
    print(f"Serving http://127.0.0.1:{server.port}/ (MCP: /mcp)", flush=True)
    server.run()
