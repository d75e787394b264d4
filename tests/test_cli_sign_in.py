"""``minimcp`` against a server that wants credentials it was not given, where signing in through
the browser cannot work: the user reads what the server said in refusing (how to get a token, on
a site that issues API tokens) and which flag takes one, not only why the sign-in failed."""

from __future__ import annotations

import os
import runpy
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import TIMEOUT, server_process
from test_cli import GUARDED, MINIMCP, minimcp

#: A Flask site that issues API tokens (``flask mcp token USER``) and has no sign-in for MCP
#: clients; its users are rows of its own database.
LEDGER = '''
import sqlite3
from flask import Flask
from minimcp.flask import MCP

USERS = __file__.removesuffix(".py") + "-users.sqlite3"
app = Flask("ledger")
app.config["SECRET_KEY"] = "ledger-site-key"
app.config["MINIMCP_TOKEN_DATABASE"] = __file__.removesuffix(".py") + "-tokens.sqlite3"


def load_user(name):
    with sqlite3.connect(USERS) as db:
        row = db.execute("SELECT name FROM users WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


mcp = MCP(app, user=lambda: None, load_user=load_user)


@mcp.tool()
def whoami() -> str:
    return str(mcp.host_user())
'''


def test_a_site_that_takes_api_tokens_says_how_to_get_one(tmp_path: Path,
                                                            serve_wsgi: Callable[[Any], str]) -> None:
    program = tmp_path / "ledger.py"
    program.write_text(LEDGER)
    with sqlite3.connect(tmp_path / "ledger-users.sqlite3") as db:
        db.execute("CREATE TABLE users (name TEXT PRIMARY KEY)")
        db.execute("INSERT INTO users VALUES ('carol')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    issued = subprocess.run([sys.executable, "-m", "flask", "--app", "ledger", "mcp", "token", "carol"], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert issued.returncode == 0, issued.stderr
    url = serve_wsgi(runpy.run_path(str(program))["app"]) + "/mcp"

    refused = minimcp("inspect", url)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"minimcp: {url}: the server refused the request (HTTP 401: Authentication required to use this site's "
        "MCP endpoint: send 'Authorization: Bearer <API token>', a token the site issues with 'flask mcp token "
        "USER'), and signing in through the browser failed (OAuthRegistrationError: Registration at "
        f"{url.removesuffix('/mcp')}/register failed with HTTP 404); give credentials with --token TOKEN or "
        "--header 'NAME: VALUE'\n")

    allowed = minimcp("call", url, "whoami", "--token", issued.stdout.strip())
    assert (allowed.returncode, allowed.stdout) == (0, "carol\n"), allowed.stderr


def test_a_protected_minimcp_server_whose_sign_in_is_out_of_reach(tmp_path: Path) -> None:
    """minimcp's own bearer auth names an authorization server this machine cannot reach."""
    (tmp_path / "guarded.py").write_text(GUARDED)
    with server_process([MINIMCP, "run", str(tmp_path / "guarded.py"), "--http", "--port", "0"]) as served:
        url = f"{served.base}/mcp"
        refused = minimcp("call", url, "look")
        allowed = minimcp("call", url, "look", "--token", "reader")
    assert refused.returncode == 2
    assert refused.stderr == (
        f"minimcp: {url}: the server refused the request (HTTP 401: Authentication required), and signing in "
        "through the browser failed (OAuthFlowError: Could not fetch http://127.0.0.1/.well-known/"
        "oauth-protected-resource/mcp: ConnectionError); give credentials with --token TOKEN or --header "
        "'NAME: VALUE'\n")
    assert (allowed.returncode, allowed.stdout) == (0, "looked\n")
