"""A library site whose routes are MCP tools too: ``flask --app flask_routes mcp stdio --user 1``
serves them to the librarian, user 1 (user 2 is a reader)."""

from flask import Flask, abort, request
from flask_login import LoginManager, UserMixin, login_required
from pydantic import BaseModel

from minimcp.flask import MCP
from minimcp.flask.routes import publish_route

app = Flask(__name__)
app.config["SECRET_KEY"] = "change-me"  # your site's own secret
login_manager = LoginManager(app)
BOOKS = {1: {"title": "Emma", "year": 1815}}


class User(UserMixin):
    def __init__(self, user_id: str, is_librarian: bool) -> None:
        self.id = user_id
        self.is_librarian = is_librarian


USERS = {"1": User("1", is_librarian=True), "2": User("2", is_librarian=False)}


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    return USERS.get(user_id)


class NewBook(BaseModel):
    title: str
    year: int


@app.get("/books/<int:book_id>")
@login_required
def show_book(book_id: int) -> dict[str, object]:
    """One book of the catalogue."""
    if book_id not in BOOKS:
        abort(404)
    return BOOKS[book_id]


@app.post("/books")
@login_required
def add_book() -> tuple[dict[str, int], int]:
    """Add a book to the catalogue."""
    book = NewBook.model_validate(request.get_json())
    book_id = max(BOOKS) + 1
    BOOKS[book_id] = book.model_dump()
    return {"id": book_id}, 201


mcp = MCP(app)

publish_route(app, "show_book")                             # GET /books/<int:book_id>
publish_route(app, "add_book", arguments=NewBook,           # POST, NewBook's fields as the JSON body
              allowed=lambda user: user.is_librarian, requirement="a librarian account")
