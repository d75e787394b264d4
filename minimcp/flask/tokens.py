"""API tokens of a Flask site, and the ``flask mcp token`` command that issues, lists and revokes them.

``flask mcp token USER`` prints a new token for the user whose id is ``USER`` (as the site's
Flask-Login ``user_loader``, or ``MCP(load_user=...)``, takes it); an MCP client sends it as
``Authorization: Bearer <token>`` and acts as that user. ``--list`` shows the user's tokens by
number and hint, ``--revoke N`` deletes one: the next request with it is answered 401.

Where they are kept: a SQLite file of their own, ``minimcp-tokens.sqlite3`` in the application's
instance folder, or the path ``app.config["MINIMCP_TOKEN_DATABASE"]`` names. Not the site's
Flask-SQLAlchemy database: ``minimcp-sync[flask]`` needs no SQLAlchemy, a migration tool never meets a
table it did not create, and the command and the server, two processes, reach the same file. Only
digests are stored (``minimcp.hosts.api_tokens``), keyed with the application's ``SECRET_KEY``, and
each row says which site (which key) issued it: two applications started from one instance folder
(staging and production) share the file, never a token, and each lists and revokes its own. A site
served from several machines passes ``MCP(token_store=...)``, any object with the methods of
:class:`TokenStore`, over a shared database.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import click
from flask import Flask
from flask.cli import with_appcontext

from minimcp.hosts.api_tokens import describe, issue, site_digest, site_id

#: ``app.config`` key: the path of the token file (default: in the instance folder).
CONFIG_KEY = "MINIMCP_TOKEN_DATABASE"
#: ``last_used`` is written at most this often per token, so that serving stays a read.
_LAST_USED_EVERY = 60.0

_SCHEMA = """CREATE TABLE IF NOT EXISTS site_api_token (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL,
    user_id TEXT NOT NULL,
    label TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created REAL NOT NULL,
    last_used REAL
)"""


@dataclass(frozen=True)
class TokenInfo:
    """What a listing shows of one token: never the token."""

    number: int
    user_id: str
    label: str
    hint: str
    created: float
    last_used: float | None

    def __str__(self) -> str:
        return describe(self.number, self.hint, self.label, _moment(self.created),
                        None if self.last_used is None else _moment(self.last_used))


class TokenStore(Protocol):
    """Where a Flask site keeps its API tokens (digests only); users are their ids as strings."""

    def create(self, user_id: str, label: str) -> str:
        """Issue a token for ``user_id`` and return it: the only time it can be read."""
        ...

    def tokens(self, user_id: str) -> list[TokenInfo]: ...

    def revoke(self, user_id: str, number: int) -> bool:
        """Delete ``user_id``'s token ``number``; whether there was one."""
        ...

    def user_id_for(self, token: str) -> str | None:
        """Whose token this is, or ``None``."""
        ...


class SQLiteTokenStore:
    """``TokenStore`` in a SQLite file, for the site whose secret is ``site_key`` (its
    ``SECRET_KEY``); a connection per use, so any thread or process may use it."""

    def __init__(self, path: str | os.PathLike[str], site_key: str | bytes) -> None:
        if not site_key:
            raise RuntimeError("API tokens are bound to the site that issued them by its SECRET_KEY: set "
                               "app.config['SECRET_KEY'] (or MCP(api_tokens=False))")
        self.path = Path(path)
        self._key = site_key.encode() if isinstance(site_key, str) else site_key
        self._site = site_id(self._key)

    @contextlib.contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10)
        try:
            with connection:
                connection.execute(_SCHEMA)
                yield connection
        finally:
            connection.close()

    def create(self, user_id: str, label: str) -> str:
        token = issue(self._key)
        with self._database() as db:
            db.execute("INSERT INTO site_api_token (site, user_id, label, digest, hint, created) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (self._site, user_id, label, token.digest, token.hint, time.time()))
        return token.secret

    def tokens(self, user_id: str) -> list[TokenInfo]:
        if not self.path.exists():
            return []
        with self._database() as db:
            rows = db.execute("SELECT id, user_id, label, hint, created, last_used FROM site_api_token "
                              "WHERE site = ? AND user_id = ? ORDER BY id", (self._site, user_id)).fetchall()
        return [TokenInfo(*row) for row in rows]

    def revoke(self, user_id: str, number: int) -> bool:
        if not self.path.exists():
            return False
        with self._database() as db:
            return db.execute("DELETE FROM site_api_token WHERE id = ? AND site = ? AND user_id = ?",
                              (number, self._site, user_id)).rowcount > 0

    def user_id_for(self, token: str) -> str | None:
        if not self.path.exists():  # no token was ever issued: a request must not create the file
            return None
        with self._database() as db:
            row = db.execute("SELECT id, user_id, last_used FROM site_api_token WHERE digest = ? AND site = ?",
                             (site_digest(token, self._key), self._site)).fetchone()
            if row is None:
                return None
            now = time.time()
            if row[2] is None or now - row[2] > _LAST_USED_EVERY:
                db.execute("UPDATE site_api_token SET last_used = ? WHERE id = ?", (now, row[0]))
        return str(row[1])


def default_store(app: Flask) -> SQLiteTokenStore:
    return SQLiteTokenStore(app.config.get(CONFIG_KEY) or Path(app.instance_path) / "minimcp-tokens.sqlite3",
                            app.secret_key or "")


class TokenSite(Protocol):
    """What ``flask mcp token`` asks of the application's ``minimcp.flask.MCP``: whether it takes
    API tokens, where they are kept, and a user by id."""

    api_tokens: bool

    @property
    def tokens(self) -> TokenStore: ...

    def _load(self, user_id: str) -> Any: ...


def token_command(mcp: TokenSite) -> click.Command:
    """``flask mcp token USER [--label TEXT | --list | --revoke N]``."""

    @click.command("token")
    @click.argument("user_id", metavar="USER")
    @click.option("--label", default="issued by flask mcp token", show_default=True, help="What the token is for.")
    @click.option("--list", "listing", is_flag=True, help="List USER's tokens instead of issuing one.")
    @click.option("--revoke", type=int, metavar="N", help="Revoke USER's token number N (see --list).")
    @with_appcontext
    def token(user_id: str, label: str, listing: bool, revoke: int | None) -> None:
        """Issue an MCP API token for USER (a user id) and print it once; only its digest is stored."""
        if listing and revoke is not None:
            raise click.UsageError("--list and --revoke are two commands: give one")
        if not mcp.api_tokens:
            raise click.UsageError("this site takes no API tokens (MCP(api_tokens=False))")
        if mcp._load(user_id) is None:
            raise click.BadParameter(f"no user with id {user_id!r}", param_hint="USER")
        try:
            store = mcp.tokens
        except RuntimeError as unusable:
            raise click.UsageError(str(unusable)) from None
        if listing:
            for info in store.tokens(user_id):
                click.echo(str(info))
        elif revoke is not None:
            if not store.revoke(user_id, revoke):
                raise click.UsageError(f"user {user_id!r} has no token {revoke} (see --list)")
            click.echo(f"Revoked token {revoke} of user {user_id!r}.")
        else:
            click.echo(store.create(user_id, label))

    return token


def _moment(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


__all__ = ["CONFIG_KEY", "SQLiteTokenStore", "TokenInfo", "TokenStore"]
