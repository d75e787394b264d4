"""The documentation site's code: every code block of the pages is a file under docs_src/, and each
of those files runs here as a reader would run it (the elicitation tutorial end to end in both eras,
the Flask app over real HTTP, the Django project in a process of its own with an API token, the
deployment on a real redis-server)."""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from conftest import ERAS, ROOT, RedisServer, readme_block, server_process
from minimcp import Client

DOCS = ROOT / "docs"
SOURCES = ROOT / "docs_src"
TUTORIAL = SOURCES / "tutorial"
HOW_TO = SOURCES / "how_to"
#: The map of the code: its blocks are diagrams of the package tree, not programs.
NOT_PROGRAMS = {"architecture.md"}
_FENCE = re.compile(r"^```(.*)$", re.MULTILINE)
_INCLUDE = re.compile(r"^```\{literalinclude\} /\.\./docs_src/(\S+)\n", re.MULTILINE)


def pages() -> list[Path]:
    return [page for page in sorted(DOCS.rglob("*.md")) if page.name not in NOT_PROGRAMS]


def run(program: Path, *args: str, cwd: Path | None = None) -> str:
    """What ``python program`` prints, run from its own folder as a reader would."""
    done = subprocess.run([sys.executable, str(program), *args], cwd=cwd or program.parent, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_every_code_block_of_the_pages_is_a_file_under_docs_src_and_every_file_is_shown() -> None:
    included: set[str] = set()
    for page in pages():
        text = page.read_text()
        openings = [info for index, info in enumerate(_FENCE.findall(text)) if index % 2 == 0]
        code = [info for info in openings if not info.startswith(("{toctree}", "{admonition}", "{eval-rst}"))]
        shown = _INCLUDE.findall(text)
        assert len(code) == len(shown), f"{page.name}: a code block written in the page, not included from docs_src/"
        included.update(shown)
    for path in included:
        assert (SOURCES / path).is_file(), path
    files = {str(p.relative_to(SOURCES)) for p in SOURCES.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files - included == {"tutorial/tutorial_site/__init__.py", "tutorial/greetings/__init__.py"}


def test_the_first_tool_answers_its_client() -> None:
    assert run(TUTORIAL / "first_client.py").splitlines() == ["['add']", "{'result': 3}"]


def test_the_elicitation_tutorial_sends_once_per_call_in_both_eras_as_the_page_prints() -> None:
    printed = run(TUTORIAL / "elicitation_client.py")
    assert printed == (TUTORIAL / "elicitation_client.out").read_text()
    lines = printed.splitlines()
    assert [line.split()[0] for line in lines if line.startswith("20")] == ["2025-11-25", "2026-07-28"]
    assert lines[-1] == "emails sent: ['ada@example.com', 'ada@example.com']"  # once a call: no resend on replay


@ERAS
def test_the_flask_tutorials_tool_runs_in_the_apps_context_over_http(serve_wsgi: Callable[[Any], str],
                                                                      mode: str) -> None:
    app = runpy.run_path(str(TUTORIAL / "flask_app.py"), run_name="flask_app")["app"]
    base = serve_wsgi(app)
    with Client(base + "/mcp", mode=mode) as client:
        assert client.call_tool("greet", {"name": "Ada"}).structured_content == {"result": "Hello, Ada, from flask_app!"}
    assert requests.get(base + "/", timeout=30).text == "The site's own pages keep working."


#: The tutorial's steps on the Django project (migrate, a user, their token), then the site served
#: on a port of the system's choosing, announced for ``server_process``.
_DJANGO_SITE = textwrap.dedent("""
    import os, sys
    os.environ["DJANGO_SETTINGS_MODULE"] = "tutorial_site.settings"
    sys.path.insert(0, os.getcwd())
    import django
    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from minimcp.django.models import APIToken
    from minimcp.httpd import WSGIServer
    call_command("migrate", verbosity=0)
    print("token", APIToken.create(User.objects.create_user("ada", password="lovelace"), "tutorial"), flush=True)
    server = WSGIServer(get_wsgi_application(), "127.0.0.1", 0)
    print(f"serving http://127.0.0.1:{server.port}/mcp/", flush=True)
    server.run()
""")


def test_the_django_tutorials_tool_greets_the_tokens_owner_and_refuses_anonymous_callers(tmp_path: Path) -> None:
    project = shutil.copytree(TUTORIAL, tmp_path / "tutorial", ignore=shutil.ignore_patterns("__pycache__"))
    with server_process([sys.executable, "-c", _DJANGO_SITE], cwd=project) as site:
        token = next(line.split()[1] for line in site.banner if line.startswith("token "))
        for mode in ("legacy", "auto"):
            with Client(site.base + "/mcp/", mode=mode, headers={"Authorization": f"Bearer {token}"}) as client:
                assert client.call_tool("greet_me", {}).structured_content == {"result": "Hello, ada!"}
        anonymous = requests.post(site.base + "/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                  headers={"Accept": "application/json, text/event-stream"}, timeout=30)
        assert anonymous.status_code == 401, anonymous.text


def test_the_how_to_test_module_passes_under_pytest() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_notes.py"],
                          cwd=HOW_TO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_the_ported_client_starts_the_ported_server_over_stdio() -> None:
    assert run(HOW_TO / "ported_client.py", cwd=ROOT) == "{'result': 3}\n"


@ERAS
def test_the_deployed_server_shares_its_state_through_redis(redis_server: RedisServer, serve_wsgi: Callable[[Any], str],
                                                            monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    app = runpy.run_path(str(HOW_TO / "deployed_server.py"))["app"]
    try:
        with Client(serve_wsgi(app) + app.path, mode=mode) as client:
            assert client.call_tool("echo", {"text": "hi"}).structured_content == {"result": "hi"}
    finally:
        app.close()


def test_the_gunicorn_line_of_the_guide_is_the_readmes_recommended_one() -> None:
    """tests/test_gunicorn_worker.py runs the README's line; the guide shows the same one."""
    assert (HOW_TO / "gunicorn.sh").read_text() == readme_block("## Deployment", "bash")
