"""``flask mcp inspect|call|install`` and ``manage.py mcp inspect|call|install|stdio``: the command
line's verbs for the example sites' own servers, acting as a user, run as real commands.

What install writes is then started the way the host would start it, and spoken to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, LEGACY, MODERN, TIMEOUT, load_example
from host_support import PROJECT, DjangoSite, project_env, start_site, stop_site

MINIMCP = str(Path(sys.executable).with_name("minimcp"))
ERAS = pytest.mark.parametrize(("era", "version"), [("legacy", LEGACY), ("auto", MODERN)])


def run(command: list[str], env: dict[str, str], cwd: Path | None = None,
        stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT * 4, start_new_session=True)


def tool_names(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return sorted(tool["name"] for tool in json.loads(done.stdout)["tools"])


def started_as_the_host_would(entry: dict[str, object], env: dict[str, str]) -> list[str]:
    """Start what a host's entry says, over stdio, from another directory; the tools it serves."""
    command = [str(entry["command"]), *entry["args"]]  # type: ignore[misc]
    shown = run([MINIMCP, "inspect", "--json", "--", *command], {**env, **entry.get("env", {})},  # type: ignore[dict-item]
                cwd=Path("/"))
    return tool_names(shown)


# --- Flask ------------------------------------------------------------------------------------------------
@pytest.fixture
def flask_app(tmp_path: Path) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """``flask --app ... mcp``, its environment (a temporary HOME), and the users' ids."""
    module = load_example("flask_notes")
    database = f"sqlite:///{tmp_path / 'notes.db'}"
    app = module.create_app(database)
    with app.app_context():
        module.add_user("alice", admin=True)
        module.add_user("bob")
        ids = {user.username: str(user.id) for user in module.db.session.scalars(module.select(module.User))}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), *sys.path]), "HOME": str(tmp_path)}
    env.pop("XDG_CONFIG_HOME", None)
    return [sys.executable, "-m", "flask", "--app", f"flask_notes:create_app({database!r})", "mcp"], env, ids


@ERAS
def test_flask_mcp_inspect_and_call_act_as_the_user(flask_app: tuple[list[str], dict[str, str], dict[str, str]],
                                                    era: str, version: str) -> None:
    flask, env, ids = flask_app
    alice = run([*flask, "inspect", "--user", ids["alice"], "--json", "--era", era], env)
    assert json.loads(alice.stdout)["protocolVersion"] == version
    assert "all_notes" in tool_names(alice)
    assert "all_notes" not in tool_names(run([*flask, "inspect", "--user", ids["bob"], "--json"], env))
    assert run([*flask, "call", "--user", ids["bob"], "--era", era, "whoami"], env).stdout == "bob\n"
    added = run([*flask, "call", "--user", ids["bob"], "--era", era, "add_note", "text=Buy milk"], env)
    assert added.returncode == 0, added.stderr
    notes = run([*flask, "call", "--user", ids["bob"], "my_notes", "--json"], env)
    assert json.loads(notes.stdout) == {"result": [f"{added.stdout.strip()}: Buy milk"]}


def test_flask_mcp_refuses_an_unknown_user_and_explains_its_verbs(
        flask_app: tuple[list[str], dict[str, str], dict[str, str]]) -> None:
    flask, env, _ = flask_app
    refused = run([*flask, "call", "--user", "999", "whoami"], env)
    assert refused.returncode == 2 and "no user '999'" in refused.stderr
    helped = run([*flask, "call", "--help"], env)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: flask mcp call")
    assert "example:\n  flask mcp call --user ada" in helped.stdout
    listed = run([*flask, "--help"], env).stdout
    assert all(f"  {verb} " in listed for verb in ("call", "inspect", "install", "stdio"))


def test_flask_mcp_install_writes_the_command_a_host_starts(
        flask_app: tuple[list[str], dict[str, str], dict[str, str]], tmp_path: Path) -> None:
    flask, env, ids = flask_app
    done = run([*flask, "install", "cursor", "--user", ids["alice"]], env)
    assert done.returncode == 0, done.stderr
    config = tmp_path / ".cursor" / "mcp.json"
    entry = json.loads(config.read_text())["mcpServers"]["Notes"]
    assert entry["args"][:3] == ["-m", "flask", "--app"]
    assert entry["args"][3].startswith(f"{EXAMPLES / 'flask_notes.py'}:create_app(")  # absolute: any directory
    assert entry["args"][4:] == ["mcp", "stdio", "--user", ids["alice"]]
    before = config.read_bytes()
    assert "nothing changed" in run([*flask, "install", "cursor", "--user", ids["alice"]], env).stdout
    assert config.read_bytes() == before
    host_env = {key: value for key, value in env.items() if key != "PYTHONPATH"}  # a host has none of ours
    assert "all_notes" in started_as_the_host_would(entry, host_env)


# --- Django ---------------------------------------------------------------------------------------------
@pytest.fixture
def site(tmp_path: Path) -> Iterator[DjangoSite]:
    started = start_site(tmp_path)
    yield started
    stop_site(started)


def manage(site: DjangoSite, home: Path, *words: str) -> subprocess.CompletedProcess[str]:
    env = project_env(site.database, DJANGO_SETTINGS_MODULE="notesite.settings", HOME=str(home))
    env.pop("XDG_CONFIG_HOME", None)
    return run([sys.executable, "manage.py", "mcp", *words], env, cwd=PROJECT)


@ERAS
def test_manage_py_mcp_inspect_and_call_act_as_the_user(site: DjangoSite, tmp_path: Path, era: str,
                                                        version: str) -> None:
    alice = manage(site, tmp_path, "inspect", "--user", "alice", "--json", "--era", era)
    assert json.loads(alice.stdout)["protocolVersion"] == version
    assert "all_notes" in tool_names(alice)
    assert "all_notes" not in tool_names(manage(site, tmp_path, "inspect", "--user", "bob", "--json"))
    assert manage(site, tmp_path, "call", "--user", "bob", "--era", era, "whoami").stdout == "bob\n"
    refused = manage(site, tmp_path, "call", "--user", "bob", "all_notes")
    assert refused.returncode == 2
    assert "Permission denied: tool 'all_notes' requires the permission notes.view_all_notes" in refused.stderr
    nobody = manage(site, tmp_path, "call", "--user", "nobody", "whoami")
    assert nobody.returncode == 2 and "no user 'nobody'" in nobody.stderr


def test_manage_py_mcp_stdio_is_mcp_stdio(site: DjangoSite, tmp_path: Path) -> None:
    served = manage(site, tmp_path, "stdio", "--user", "nobody")
    assert served.returncode != 0 and "No user named 'nobody'" in served.stderr
    helped = manage(site, tmp_path, "install", "--help")
    assert helped.returncode == 0 and "example:\n  manage.py mcp install claude-desktop --user ada" in helped.stdout


def test_manage_py_mcp_install_writes_the_command_a_host_starts(site: DjangoSite, tmp_path: Path) -> None:
    done = manage(site, tmp_path, "install", "claude-code", "--user", "alice", "--env", f"NOTES_DATABASE={site.database}")
    assert done.returncode == 0, done.stderr
    config = tmp_path / ".claude.json"
    entry = json.loads(config.read_text())["mcpServers"]["Notes"]
    assert entry == {"type": "stdio", "command": sys.executable,
                     "args": [str(PROJECT / "manage.py"), "mcp", "stdio", "--user", "alice"],
                     "env": {"DJANGO_SETTINGS_MODULE": "notesite.settings", "NOTES_DATABASE": str(site.database)}}
    before = config.read_bytes()
    again = manage(site, tmp_path, "install", "claude-code", "--user", "alice", "--env",
                   f"NOTES_DATABASE={site.database}")
    assert "nothing changed" in again.stdout and config.read_bytes() == before
    host_env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    assert "all_notes" in started_as_the_host_would(entry, host_env)
