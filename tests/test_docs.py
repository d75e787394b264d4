"""The documentation site's code: every code block of the pages is a file under docs_src/, and each
of those files runs here as a reader would run it (the elicitation tutorial end to end in both eras,
the Flask apps over real HTTP or stdio, the Django projects in a process of their own with API
tokens, the deployment and the shared tasks on a real redis-server, the client against a served
Bistro), or in the tests of the feature it shows (named below, above the topic pages' tests)."""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import json
import re
import runpy
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from conftest import ERAS, ROOT, RedisServer, ServerProcess, load_example, server_process, wait_for
from minimcp import Client, StdioServerParameters

DOCS = ROOT / "docs"
SOURCES = ROOT / "docs_src"
TUTORIAL = SOURCES / "tutorial"
HOW_TO = SOURCES / "how_to"
#: The map of the code: its blocks are diagrams of the package tree, not programs.
NOT_PROGRAMS = {"architecture.md"}
_FENCE = re.compile(r"^ *```(.*)$", re.MULTILINE)
_INCLUDE = re.compile(r"^ *```\{literalinclude\} /\.\./docs_src/(\S+)\n", re.MULTILINE)


def pages() -> list[Path]:
    return [page for page in sorted(DOCS.rglob("*.md")) if page.name not in NOT_PROGRAMS]


def run(program: Path, *args: str, cwd: Path | None = None, typed: str = "") -> str:
    """What ``python program`` prints, run from its own folder as a reader would (``typed`` on its
    standard input)."""
    done = subprocess.run([sys.executable, str(program), *args], cwd=cwd or program.parent, capture_output=True,
                          text=True, timeout=120, check=False, input=typed)
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
    assert {path for path in files - included if Path(path).name != "__init__.py"} == set()  # package markers only


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


#: A Django project's steps before serving (``migrate``; the test's ``setup``: users, their
#: tokens printed as ``token NAME TOKEN``), then the site served on a port of the system's choosing,
#: announced for ``server_process``.
_DJANGO_SITE = textwrap.dedent("""
    import os, sys
    os.environ["DJANGO_SETTINGS_MODULE"] = sys.argv[1]
    sys.path.insert(0, os.getcwd())
    import django
    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from minimcp.django.models import APIToken
    from minimcp.httpd import WSGIServer
    call_command("migrate", run_syncdb=True, verbosity=0)
    exec(sys.argv[2])
    server = WSGIServer(get_wsgi_application(), "127.0.0.1", 0)
    print(f"serving http://127.0.0.1:{server.port}/mcp/", flush=True)
    server.run()
""")


def django_site(project: Path, settings: str, setup: str) -> contextlib.AbstractContextManager[ServerProcess]:
    """The Django project in ``project`` set up by ``setup`` and served in a process of its own."""
    return server_process([sys.executable, "-c", _DJANGO_SITE, settings, textwrap.dedent(setup)], cwd=project)


def tokens(site: ServerProcess) -> dict[str, str]:
    return {words[1]: words[2] for words in (line.split() for line in site.banner) if words[0] == "token"}


def test_the_django_tutorials_tool_greets_the_tokens_owner_and_refuses_anonymous_callers(tmp_path: Path) -> None:
    project = shutil.copytree(TUTORIAL, tmp_path / "tutorial", ignore=shutil.ignore_patterns("__pycache__"))
    setup = 'print("token ada", APIToken.create(User.objects.create_user("ada", password="lovelace"), "tutorial"))'
    with django_site(project, "tutorial_site.settings", setup) as site:
        token = tokens(site)["ada"]
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


# --- the topic pages and the how-to guides ------------------------------------------------------------
# The shell lines are run where what they serve is tested: how_to/command_line.sh by test_cli.py,
# how_to/gunicorn.sh by test_gunicorn_worker.py, how_to/granian.sh by test_granian.py; the
# low-level, visibility, extension, claim and middleware programs by the tests of those features.
TOPICS = SOURCES / "topics"


def test_the_client_page_books_the_bistros_table_answering_in_the_terminal() -> None:
    """The client example against the README's Bistro, served by the command line: the date asked
    about is full, the question comes up in the terminal, and the reader accepts the other date."""
    bistro = [sys.executable, "-m", "minimcp", "run", str(ROOT / "examples" / "bistro_server.py"), "--http", "--port", "0"]
    with server_process(bistro, cwd=ROOT) as served:
        printed = run(TOPICS / "client.py", served.base + "/mcp", typed="y\n\n\n")
    assert printed.endswith("> Booked a table for 2 on 2025-12-26.\n"), printed


def test_the_component_filter_hides_the_admin_tool_from_a_caller_without_the_scope() -> None:
    assert run(TOPICS / "admins_only.py").splitlines() == ["['quote']", "Unknown tool: wipe"]


def test_a_follower_hears_each_edit_of_the_note_it_listens_to(serve_http: Callable[..., str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    program = runpy.run_path(str(TOPICS / "notes_subscriptions.py"), run_name="notes_subscriptions")
    url = serve_http(program["mcp"])
    follower = threading.Thread(target=program["follow"], args=(url,), name="docs-follower")
    follower.start()
    with Client(url) as editor:
        assert wait_for(lambda: editor.call_tool("edit_note", {"name": "todo", "text": "buy milk"}) is not None
                        and "buy milk" in capsys.readouterr().out, 15)
        assert editor.call_tool("edit_note", {"name": "shopping", "text": "eggs"}).content[0].text == "saved"
    program["mcp"].close()  # the server ends its open listens: the follower's loop ends
    follower.join(15)
    assert not follower.is_alive()
    assert "eggs" not in capsys.readouterr().out  # a note nobody listens to is heard by no one


def test_the_export_task_asks_once_and_publishes_once_per_call(serve_http: Callable[..., str]) -> None:
    server = runpy.run_path(str(HOW_TO / "export_task.py"), run_name="export_task")
    printed = run(HOW_TO / "export_client.py", serve_http(server["mcp"])).splitlines()
    assert printed.count("asked: Publish the export?") == 2
    assert "text='exported'" in printed[1] and printed[-1] == "completed", printed
    assert server["published"] == ["orders", "orders"]  # the answered question's replay publishes nothing twice


@pytest.mark.parametrize("program", ["tasks_on_redis.py", "tasks_on_redis_store.py"])
def test_a_task_started_on_one_process_is_read_on_another_through_redis(
        program: str, redis_server: RedisServer, serve_http: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    first, second = (runpy.run_path(str(HOW_TO / program))["mcp"] for _ in range(2))  # two processes' servers
    try:
        for mcp in (first, second):
            mcp.tool(task=True)(_count_rows)
        with Client(serve_http(first)) as starter, Client(serve_http(second)) as elsewhere:
            job = starter.call_tool("_count_rows", {"table": "orders"}, task=True)
            assert elsewhere.task(job.task_id).result(timeout=30).structured_content == {"result": "orders: 3 rows"}
    finally:
        first.close()
        second.close()


def _count_rows(table: str) -> str:
    """The exports server's task for the test: quick, with an answer to recognise."""
    return f"{table}: 3 rows"


def test_the_flask_routes_are_tools_for_the_users_they_allow(tmp_path: Path) -> None:
    shutil.copy(HOW_TO / "flask_routes.py", tmp_path)

    def as_user(user: str) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, cwd=str(tmp_path),
                                     args=["-m", "flask", "--app", "flask_routes", "mcp", "stdio", "--user", user])

    with Client(as_user("1")) as librarian:
        assert [tool.name for tool in librarian.list_tools().tools] == ["show_book", "add_book"]
        assert json.loads(librarian.call_tool("add_book", {"title": "Persuasion", "year": 1817}).content[0].text) == {"id": 2}
        assert "Emma" in librarian.call_tool("show_book", {"book_id": 1}).content[0].text
    with Client(as_user("2")) as reader:
        assert [tool.name for tool in reader.list_tools().tools] == ["show_book"]


def test_the_proxy_guide_serves_an_http_and_a_stdio_server_as_one(serve_http: Callable[..., str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = ROOT / "tests" / "servers" / "proxy_upstream.py"
    url = serve_http(runpy.run_path(str(upstream), run_name="proxy_upstream")["mcp"])
    monkeypatch.setattr(sys, "argv", ["proxy_gateway.py", url, sys.executable, str(upstream)])
    proxy = runpy.run_path(str(HOW_TO / "proxy_gateway.py"), run_name="proxy_gateway")["proxy"]
    try:
        with Client(proxy) as client:
            assert {"web_echo", "local_echo"} <= {tool.name for tool in client.list_tools().tools}
            assert client.call_tool("web_echo", {"text": "over HTTP"}).content[0].text == "over HTTP"
            assert client.call_tool("local_echo", {"text": "over stdio"}).content[0].text == "over stdio"
    finally:
        proxy.close()


def test_the_openapi_operations_tagged_pets_become_tools(serve_wsgi: Callable[[Any], str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    api = serve_wsgi(load_example("petstore_api").PetShop("pet-secret"))
    monkeypatch.setattr(sys, "argv", ["openapi_tools.py", api + "/openapi.json"])
    mcp = runpy.run_path(str(HOW_TO / "openapi_tools.py"), run_name="openapi_tools")["mcp"]
    with Client(mcp) as client:
        assert {tool.name for tool in client.list_tools().tools} == {"listPets", "addPet", "getPet"}
        added = client.call_tool("addPet", {"name": "Rex", "species": "dog"})  # a POST: the session's token
        assert not added.is_error, added.content
        assert "Rex" in client.call_tool("listPets", {}).content[0].text


def test_the_protected_server_sends_a_caller_without_a_token_to_its_identity_provider(
        serve_http: Callable[..., str]) -> None:
    url = serve_http(runpy.run_path(str(HOW_TO / "protected_server.py"), run_name="protected_server")["mcp"])
    refused = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30,
                            headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    assert 'resource_metadata="https://notes.example.com/.well-known/oauth-protected-resource/mcp"' in challenge
    metadata = requests.get(url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp", timeout=30).json()
    assert metadata["authorization_servers"] == ["https://idp.example.com/"]


def test_the_server_with_its_own_authorization_server_publishes_its_endpoints(serve_http: Callable[..., str]) -> None:
    url = serve_http(runpy.run_path(str(HOW_TO / "own_auth_server.py"), run_name="own_auth_server")["mcp"])
    metadata = requests.get(url.removesuffix("/mcp") + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert metadata["issuer"] == "https://notes.example.com"
    assert metadata["registration_endpoint"] == "https://notes.example.com/register"
    assert metadata["revocation_endpoint"] == "https://notes.example.com/revoke"
    assert requests.post(url, json={}, timeout=30).status_code == 401


_BOOKSHOP = """
    from django.contrib.auth.models import Permission
    from library.models import Author, Book, Library
    from notes.models import Note
    ada, bob = User.objects.create_user("ada"), User.objects.create_user("bob")
    ada.user_permissions.set(Permission.objects.filter(codename__in=[
        "view_book", "add_book", "change_book", "delete_book", "view_author", "view_review", "view_all_notes"]))
    austen, joyce = Author.objects.create(name="Jane Austen"), Author.objects.create(name="James Joyce")
    Book.objects.create(library=Library.objects.create(name="Central", librarian=ada), title="Emma", author=austen, year=1815)
    Book.objects.create(library=Library.objects.create(name="East", librarian=bob), title="Ulysses", author=joyce, year=1922)
    Note.objects.create(owner=bob, text="order more Joyce")
    for user in (ada, bob):
        print("token", user.username, APIToken.create(user, "docs"), flush=True)
"""


def test_the_bookshops_models_views_and_notes_are_tools_within_each_users_reach(tmp_path: Path) -> None:
    """The Django pages' project: ada, a librarian with the book permissions, reaches her library's
    books only, through the toolset and the REST views alike, and creates one without naming her
    library; bob, with no permission, sees neither the model tools nor the notes, only the view
    published with its own permission classes."""
    project = shutil.copytree(SOURCES / "bookshop", tmp_path / "bookshop", ignore=shutil.ignore_patterns("__pycache__"))
    with django_site(project, "bookshop.settings", _BOOKSHOP) as site:
        token = tokens(site)
        with Client(site.base + "/mcp", headers={"Authorization": f"Bearer {token['ada']}"}) as ada:
            names = {tool.name for tool in ada.list_tools().tools}
            assert {"list_books", "get_book", "create_book", "update_book", "delete_book", "list_authors",
                    "api_books_list", "books_blurb", "reviews_get", "open_reviews_get", "all_notes"} <= names, names
            assert "Ulysses" not in ada.call_tool("list_books", {}).content[0].text
            created = ada.call_tool("create_book", {"title": "Persuasion", "author": 1, "year": 1817})
            assert not created.is_error, created.content
            titles = ada.call_tool("api_books_list", {}).content[0].text
            assert "Persuasion" in titles and "Emma" in titles and "Ulysses" not in titles
            assert ada.call_tool("all_notes", {}).structured_content == {"result": ["order more Joyce"]}
        with Client(site.base + "/mcp/", headers={"Authorization": f"Bearer {token['bob']}"}) as bob:
            names = {tool.name for tool in bob.list_tools().tools}
            assert "open_reviews_get" in names and not names & {"list_books", "api_books_list", "all_notes"}, names


# --- the API reference ----------------------------------------------------------------------------


def _reference_extension() -> Any:
    """The site's extension that generates the reference (docs/_ext/minimcp_reference.py)."""
    spec = importlib.util.spec_from_file_location("minimcp_reference", DOCS / "_ext" / "minimcp_reference.py")
    assert spec is not None and spec.loader is not None
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    return extension


def public_modules() -> dict[str, list[str]]:
    """Each module of the package whose source sets ``__all__``, outside private (``_``) modules,
    with its ``__all__`` (read from the source; a computed one from the imported module)."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "minimcp").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if any(part.startswith("_") for part in parts):
            continue
        for statement in ast.parse(path.read_text()).body:
            if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in statement.targets):
                name = ".".join(parts)
                try:
                    found[name] = list(ast.literal_eval(statement.value))
                except ValueError:
                    found[name] = list(importlib.import_module(name).__all__)
    return found


def test_every_public_module_is_in_the_reference() -> None:
    listed = _reference_extension().referenced_modules(DOCS, conf_value("minimcp_reference_pages"))
    assert {"minimcp", "minimcp.server", "minimcp.client", "minimcp.flask", "minimcp.cli"} <= public_modules().keys()
    assert sorted(public_modules().keys() - set(listed)) == []
    # The official import paths whose names are what they define (no ``__all__``).
    assert {"minimcp.types", "minimcp.server.stdio", "minimcp.server.elicitation", "minimcp.django.toolsets",
            "minimcp.django.drf"} <= set(listed)
    assert len(listed) == len(set(listed)), "a module listed twice"


def conf_value(name: str) -> Any:
    """A setting of docs/conf.py, read from its source (running it would configure Django)."""
    for statement in ast.parse((DOCS / "conf.py").read_text()).body:
        if isinstance(statement, ast.Assign) and getattr(statement.targets[0], "id", None) == name:
            return ast.literal_eval(statement.value)
    raise AssertionError(f"docs/conf.py sets no {name}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as CI builds it: a warning (a docstring that breaks reST, a link to nothing)
    fails the build."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_built_reference_describes_or_links_every_public_name_at_each_of_its_import_paths(site: Path) -> None:
    html = "".join(page.read_text() for page in (site / "reference").glob("*.html"))
    anchors = set(re.findall(r'id="([^"]+)"', html))
    missing = [f"{module}.{name}" for module, names in public_modules().items() for name in names
               if f"{module}.{name}" not in anchors]
    assert missing == []
    assert 'id="minimcp.server.mcpserver.MCPServer"' in html or 'id="minimcp.server.MCPServer"' in html
    assert html.count('class="sig-name descname"><span class="pre">MCPServer<') == 1  # described once


def test_the_reference_prints_the_command_lines_help_for_each_verb(site: Path) -> None:
    page = (site / "reference" / "deployment.html").read_text()
    for verb in ("run", "inspect", "call", "install"):
        assert f"usage: minimcp {verb}" in page


def _described(page: str, anchor: str) -> str:
    """The signature line of the object described at ``anchor`` on ``page``, as HTML."""
    found = re.search(rf'<dt [^>]*id="{re.escape(anchor)}".*?</dt>', page, re.DOTALL)
    assert found is not None, anchor
    return found.group(0)


def test_a_name_reexported_from_its_topic_module_is_described_as_where_it_is_assigned(site: Path) -> None:
    page = (site / "reference" / "types.html").read_text()
    assert "The version a legacy peer is assumed to speak when it never said" in page  # its #: comment
    assert "TypeAlias" in _described(page, "minimcp.types.RequestId")  # its annotation
    assert 'href="#minimcp.types.Meta"' in _described(page, "minimcp.types.AudioContent.meta")
    assert 'href="#minimcp.types.ContentBlock"' in _described(page, "minimcp.types.CallToolResult.content")
    lowlevel = (site / "reference" / "lowlevel.html").read_text()
    assert "sig-paren" not in _described(lowlevel, "minimcp.server.core.ports.SessionStore")  # no (*args, **kwargs)
