"""The two example sites as the tests run them: ``examples/flask_notes.py`` in this process and
``examples/django_notes`` in a subprocess, each on a loopback port with a fresh SQLite database.
Both serve the same notes tools to alice (who may use ``all_notes``) and bob (who may not); a
``Site`` says where one is, each user's API token and how to read its notes table."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
from flask import Flask

from conftest import EXAMPLES, TIMEOUT, load_example, server_process
from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])
ACCEPT = "application/json, text/event-stream"


class Site:
    """A running example site: its MCP ``url``, each user's API token, and its notes table."""

    def __init__(self, url: str, tokens: dict[str, str], notes: Callable[[], list[str]]) -> None:
        self.url = url
        self.tokens = tokens
        self.notes = notes

    def http(self, user: str) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.tokens[user]}"
        return session

    def client(self, user: str, mode: str, **options: Any) -> Client:
        return Client(streamable_http_client(self.url, http_client=self.http(user)), mode=mode, **options)

    def raw(self, user: str, message: dict[str, Any], **headers: str) -> requests.Response:
        """One POST as ``user``, for what the client would never send."""
        return self.http(user).post(self.url, json=message, timeout=TIMEOUT, stream=True,
                                    headers={"Accept": ACCEPT, **headers})


def text(result: Any) -> str:
    return result.content[0].text


def structured(result: Any) -> Any:
    """A successful tool result's structured content (a model toolset's answer)."""
    assert not result.is_error, text(result)
    return result.structured_content


def answer(result: Any) -> Any:
    """A successful DRF tool's result: the view's JSON answer, as text."""
    assert not result.is_error, text(result)
    return json.loads(text(result))



class FlaskSite(Site):
    def __init__(self, module: Any, app: Flask, base: str, tokens: dict[str, str], app_spec: str) -> None:
        super().__init__(base + "/mcp", tokens, self._notes)
        self.module = module
        self.app = app
        self.base = base
        self.app_spec = app_spec  # ``flask --app`` for the same site (database, instance folder) in another process

    def user_id(self, username: str) -> str:
        with self.app.app_context():
            User = self.module.User
            return str(self.module.db.session.scalar(self.module.select(User.id).where(User.username == username)))

    def flask(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``flask --app <this site> ARGS`` in a process of its own."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), *sys.path])}
        return subprocess.run([sys.executable, "-m", "flask", "--app", self.app_spec, *args], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)

    def _notes(self) -> list[str]:
        with self.app.app_context():
            return [note.text for note in self.module.db.session.scalars(self.module.select(self.module.Note))]


def flask_site(tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> FlaskSite:
    """``examples/flask_notes.py`` on a fresh SQLite file, served on a loopback port."""
    module = load_example("flask_notes")
    database, instance = f"sqlite:///{tmp_path / 'notes.db'}", str(tmp_path / "instance")
    app = module.create_app(database, instance)
    with app.app_context():
        tokens = {"alice": module.add_user("alice", admin=True), "bob": module.add_user("bob")}
    return FlaskSite(module, app, serve_wsgi(app), tokens, f"flask_notes:create_app({database!r}, {instance!r})")


PROJECT = EXAMPLES / "django_notes"
ROOT = Path(__file__).resolve().parents[1]


def project_env(database: Path, **settings: str) -> dict[str, str]:
    return {**os.environ, "NOTES_DATABASE": str(database), "PYTHONPATH": os.pathsep.join([str(ROOT), str(PROJECT)]),
            **settings}


class DjangoSite(Site):
    def __init__(self, process: subprocess.Popen[str], base: str, tokens: dict[str, str], database: Path,
                 running: contextlib.ExitStack) -> None:
        super().__init__(base + "/mcp/", tokens, self._notes)
        self.process = process
        self.base = base
        self.database = database
        self.running = running  # closing it stops the process

    def _notes(self) -> list[str]:
        with sqlite3.connect(self.database) as db:
            return [row[0] for row in db.execute("SELECT text FROM notes_note ORDER BY id")]

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``manage.py ARGS`` on this site's database, in a process of its own."""
        return subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT, capture_output=True, text=True,
                              env=project_env(self.database), timeout=TIMEOUT)

    def open_connections(self) -> int:
        """How many SQLite connections the server process holds open on its database file right now."""
        fds = Path(f"/proc/{self.process.pid}/fd")
        return sum(1 for fd in fds.iterdir() if _target(fd) == str(self.database))


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed while we looked
        return ""


def start_site(tmp_path: Path, **settings: str) -> DjangoSite:
    """The Django project's ``demo`` command on a port it picks; it prints the users' tokens, then
    where it serves (``conftest.server_process`` waits for that, bounded, and reads the rest)."""
    database = tmp_path / "notes.sqlite3"
    stack = contextlib.ExitStack()
    server = stack.enter_context(server_process([sys.executable, "manage.py", "demo", "--port", "0"],
                                                project_env(database, **settings), cwd=PROJECT))
    tokens = dict(re.findall(r"(\w+)'s API token \(shown once\): (\S+)", "".join(server.banner)))
    return DjangoSite(server.process, server.base, tokens, database, stack)


def stop_site(site: DjangoSite) -> None:
    site.running.close()
