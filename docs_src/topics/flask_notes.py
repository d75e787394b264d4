"""A Flask-SQLAlchemy site with Flask-Login (user 1 an admin, user 2 not) whose notes are MCP
tools at /mcp: ``flask --app flask_notes mcp stdio --user 1`` serves them to user 1 over stdio."""

from flask import Flask
from flask_login import LoginManager, UserMixin, current_user
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import select
from sqlalchemy.orm import Mapped, mapped_column

from minimcp.flask import MCP

app = Flask(__name__)
app.config["SQLALCHEMY_DATABASE_URI"] = "sqlite:///" + __file__.removesuffix(".py") + ".db"
db = SQLAlchemy(app)
login_manager = LoginManager(app)


class User(UserMixin, db.Model):
    id: Mapped[int] = mapped_column(primary_key=True)
    is_admin: Mapped[bool]


class Note(db.Model):
    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int]
    text: Mapped[str]


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    return db.session.get(User, int(user_id))


with app.app_context():
    db.create_all()
    if db.session.get(User, 1) is None:
        db.session.add_all([User(id=1, is_admin=True), User(id=2, is_admin=False)])
        db.session.commit()

mcp = MCP(app)                     # or MCP() + mcp.init_app(app, url_prefix="/mcp")


@mcp.tool()
def my_notes() -> list[str]:
    return [n.text for n in db.session.scalars(select(Note).where(Note.owner_id == current_user.id))]


@mcp.tool(allowed=lambda user: user.is_admin, requirement="an admin account")
def all_notes() -> list[str]:
    return [n.text for n in db.session.scalars(select(Note))]
