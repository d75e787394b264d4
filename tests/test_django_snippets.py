"""What a new user meets following the documentation with a Django REST framework tutorial project
(``examples/django_snippets``: a model whose ``save()`` fills a field, a ViewSet whose permission
classes are looser than the model's permissions, views that look at the caller's address), served
in a subprocess on a loopback port with a fresh SQLite database.

Its users: alice (a superuser), bob (view, add and change snippets and collections; no delete
permission) and carol (view snippets only). Clients reach the site from 127.0.0.1 or, bound to
that address, from 127.0.0.5: both are this machine, which the site tells apart by ``REMOTE_ADDR``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

from conftest import EXAMPLES, TIMEOUT, server_process
from host_support import ERAS, ROOT, answer, structured, text
from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.jsonrpc import MCPError

PROJECT = EXAMPLES / "django_snippets"
ELSEWHERE = "127.0.0.5"  # loopback too, but not the address LoopbackOnly trusts


class _BoundTo(HTTPAdapter):
    """Connections from one local address."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, source_address=(self.address, 0), **kwargs)


class Snippets:
    """The running project: its base URL, each user's API token and its database file."""

    def __init__(self, base: str, banner: str, database: Path) -> None:
        self.base = base
        self.url = base + "/mcp"
        self.tokens = dict(re.findall(r"(\w+)'s API token \(shown once\): (\S+)", banner))
        self.database = database

    def http(self, user: str, address: str = "127.0.0.1", **headers: str) -> requests.Session:
        session = requests.Session()
        session.mount("http://", _BoundTo(address))
        session.headers.update({"Authorization": f"Bearer {self.tokens[user]}", **headers})
        return session

    def client(self, user: str, mode: str = "auto", address: str = "127.0.0.1", url: str | None = None,
               **headers: str) -> Client:
        return Client(streamable_http_client(url or self.url, http_client=self.http(user, address, **headers)),
                      mode=mode)

    def snippet_ids(self, username: str) -> list[int]:
        with sqlite3.connect(self.database) as db:
            return [row[0] for row in db.execute(
                "SELECT s.id FROM snippets_snippet s JOIN auth_user u ON u.id = s.owner_id WHERE u.username = ?"
                " ORDER BY s.id", (username,))]

    def collection_of(self, username: str) -> int:
        with sqlite3.connect(self.database) as db:
            return int(db.execute("SELECT c.id FROM snippets_collection c JOIN auth_user u ON u.id = c.owner_id"
                                  " WHERE u.username = ?", (username,)).fetchone()[0])


def _env(database: Path, **settings: str) -> dict[str, str]:
    return {**os.environ, "SNIPPETS_DATABASE": str(database), "PYTHONPATH": str(ROOT), **settings}


@contextlib.contextmanager
def running_snippets(directory: Path, **settings: str) -> Iterator[Snippets]:
    database = directory / "snippets.sqlite3"
    command = [sys.executable, "manage.py", "demo", "--port", "0"]
    with server_process(command, _env(database, **settings), cwd=PROJECT) as server:
        yield Snippets(server.base, "".join(server.banner), database)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snippets]:
    with running_snippets(tmp_path_factory.mktemp("snippets")) as running:
        yield running


HIGHLIGHTING = """
from rest_framework import renderers
from rest_framework.decorators import action
from rest_framework.response import Response

from minimcp.django.drf import publish
from snippets.api import SnippetViewSet


class HighlightingViewSet(SnippetViewSet):
    @action(detail=True, renderer_classes=[renderers.StaticHTMLRenderer])
    def highlight(self, request, *args, **kwargs):
        return Response("<html><body>" + self.get_object().highlighted + "</body></html>")


publish(HighlightingViewSet, name="snippet", actions=["retrieve", "highlight"])
"""


def test_an_action_that_renders_html_answers_the_page_itself(tmp_path: Path) -> None:
    """The DRF tutorial's ``highlight``: an ``@action`` with ``StaticHTMLRenderer`` whose ``Response``
    holds the page; the tool answers that page, as the browser gets it, not the page as a JSON string."""
    (tmp_path / "highlighting").mkdir()
    (tmp_path / "highlighting" / "__init__.py").write_text("")
    (tmp_path / "highlighting" / "mcp.py").write_text(HIGHLIGHTING)  # found at start-up, as the README says
    (tmp_path / "with_highlighting.py").write_text(
        "from snippetsite.settings import *\nINSTALLED_APPS = [*INSTALLED_APPS, 'highlighting']\n")
    with running_snippets(tmp_path, DJANGO_SETTINGS_MODULE="with_highlighting",
                          PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)])) as site, \
            site.client("bob") as bob:
        made = structured(bob.call_tool("create_snippet", {"title": "loop", "code": "for x in y"}))
        page = bob.call_tool("snippet_highlight", {"pk": made["id"]})
        assert not page.is_error, text(page)
        assert text(page) == '<html><body><pre class="language-python"><span class="line" data-n="1"><b>for</b> ' \
                             'x <b>in</b> y</span></pre></body></html>'
        assert answer(bob.call_tool("snippet_retrieve", {"pk": made["id"]}))["title"] == "loop"


# --- a model that fills a field in save() ----------------------------------------------------------
@ERAS
def test_a_toolset_writes_a_model_whose_save_fills_a_field_the_tool_does_not_write(site: Snippets, mode: str) -> None:
    with site.client("bob", mode) as client:
        made = structured(client.call_tool("create_snippet", {"title": f"loop {mode}", "code": "for x in y"}))
        assert made["highlighted"].startswith('<pre class="language-python">') and "<b>for</b>" in made["highlighted"]
        changed = structured(client.call_tool("update_snippet", {"id": made["id"], "language": "sql",
                                                                 "code": "select 1"}))
        assert changed["highlighted"] == '<pre class="language-sql"><span class="line" data-n="1"><b>select</b> 1</span></pre>'
        refused = client.call_tool("create_snippet", {"code": "x", "language": "cobol"})  # a written field: checked
        assert refused.is_error and "language" in text(refused)
        empty = client.call_tool("create_snippet", {"title": "nothing", "code": ""})
        assert empty.is_error and text(empty).endswith("Not saved: code: This field cannot be blank.")


def test_only_the_named_write_fields_are_writable(site: Snippets) -> None:
    with site.client("bob") as client:
        tools = {tool.name: tool for tool in client.list_tools().tools}
        for name in ("create_snippet", "update_snippet"):
            assert set(tools[name].input_schema["properties"]) - {"id"} == {"title", "code", "language", "collection"}
        mine = site.snippet_ids("bob")[0]
        client.call_tool("update_snippet", {"id": mine, "title": "sneaky", "approved": True})
        assert structured(client.call_tool("get_snippet", {"id": mine}))["approved"] is False


def test_a_toolset_that_writes_without_naming_its_write_fields_fails_at_start_up(tmp_path: Path) -> None:
    code = ("from snippets.models import Snippet\nfrom minimcp.django.toolsets import ModelToolset\n"
            "from minimcp.django import MCP\n"
            "class Careless(ModelToolset):\n    model = Snippet\n    create = True\n"
            "try:\n    Careless.register(MCP())\nexcept ValueError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=PROJECT, capture_output=True,
                          text=True, timeout=TIMEOUT, env=_env(tmp_path / "db.sqlite3"))
    assert done.returncode == 0, done.stderr
    assert "Careless writes (create or update) but names no write_fields" in done.stdout


def test_a_foreign_key_takes_only_what_the_caller_may_reach_and_says_the_same_of_missing_ids(site: Snippets) -> None:
    alices = site.collection_of("alice")
    with site.client("bob") as client:
        mine = structured(client.call_tool("create_snippet", {"code": "pass", "collection": site.collection_of("bob")}))
        assert mine["collection"] == site.collection_of("bob")
        theirs = client.call_tool("create_snippet", {"code": "pass", "collection": alices})
        missing = client.call_tool("create_snippet", {"code": "pass", "collection": 999999})
        assert theirs.is_error and missing.is_error
        assert text(theirs).endswith(f"Not saved: collection: No collection with id {alices} that you may reach.")
        assert text(missing) == text(theirs).replace(str(alices), "999999")
        moved = client.call_tool("update_snippet", {"id": mine["id"], "collection": alices})
        assert moved.is_error and "No collection with id" in text(moved)
    with site.client("alice") as client:  # her own collection is hers to use
        assert structured(client.call_tool("create_snippet", {"code": "pass", "collection": alices}))["collection"] == alices


# --- DRF views keep the model's permissions -----------------------------------------------------------
@ERAS
def test_a_viewset_keeps_the_models_permissions_over_its_looser_permission_classes(site: Snippets, mode: str) -> None:
    with site.client("bob", mode) as client:
        names = {tool.name for tool in client.list_tools().tools}
        assert {"api_snippets_list", "api_snippets_create", "api_snippets_partial_update"} <= names
        assert "api_snippets_destroy" not in names  # no delete_snippet, though the view lets owners delete
        mine = structured(client.call_tool("create_snippet", {"code": f"kept {mode}"}))["id"]
        with pytest.raises(MCPError, match=r"requires the permission snippets\.delete_snippet and what "
                                           r"SnippetViewSet's permission classes allow"):
            client.call_tool("api_snippets_destroy", {"pk": mine})
        assert mine in site.snippet_ids("bob")
        # published with model_permissions=False: the view's classes alone, the owner check included
        assert "own_snippets_destroy" in names
        refused = client.call_tool("own_snippets_destroy", {"pk": site.snippet_ids("alice")[0]})
        assert refused.is_error and "403 Forbidden" in text(refused)
        assert text(client.call_tool("own_snippets_destroy", {"pk": mine})) == "SnippetViewSet (DELETE): 204 No Content"
        assert mine not in site.snippet_ids("bob")
    with site.client("carol", mode) as client:  # view_snippet only: reading, nothing else
        names = {tool.name for tool in client.list_tools().tools}
        assert {"api_snippets_list", "api_snippets_retrieve"} <= names
        assert not names & {"api_snippets_create", "api_snippets_update", "api_snippets_partial_update",
                            "api_snippets_destroy"}
        assert answer(client.call_tool("api_snippets_retrieve", {"pk": site.snippet_ids("bob")[0]}))["owner"] == "bob"


# --- the endpoint at /mcp and /mcp/ -------------------------------------------------------------------
@ERAS
@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
def test_the_endpoint_answers_with_and_without_the_trailing_slash(site: Snippets, mode: str, path: str) -> None:
    with site.client("bob", mode, url=site.base + path) as client:
        assert "api_snippets_list" in {tool.name for tool in client.list_tools().tools}


def test_minimcp_inspect_reaches_the_endpoint_without_the_slash(site: Snippets) -> None:
    minimcp = str(Path(sys.executable).with_name("minimcp"))
    shown = subprocess.run([minimcp, "inspect", "--json", "--token", site.tokens["bob"], site.base + "/mcp"],
                           capture_output=True, text=True, timeout=TIMEOUT)
    assert shown.returncode == 0, shown.stderr
    assert "create_snippet" in {tool["name"] for tool in json.loads(shown.stdout)["tools"]}


def test_minimcp_call_of_a_tool_the_caller_may_not_use_says_which_permission_it_needs(site: Snippets) -> None:
    """carol may view snippets only: the tool is not listed to her, and calling it says why rather
    than that the server has no such tool."""
    minimcp = str(Path(sys.executable).with_name("minimcp"))
    before = site.snippet_ids("carol")
    called = subprocess.run([minimcp, "call", "--token", site.tokens["carol"], site.url, "api_snippets_create",
                             "code=print(1)"], capture_output=True, text=True, timeout=TIMEOUT)
    assert called.returncode == 2
    assert "Permission denied: tool 'api_snippets_create' requires the permission snippets.add_snippet" in called.stderr
    assert site.snippet_ids("carol") == before


def test_manage_py_check_warns_of_a_mount_that_serves_only_the_slashed_url(tmp_path: Path) -> None:
    (tmp_path / "slashed.py").write_text("from django.urls import include, path\nfrom minimcp.django import mcp\n"
                                         "urlpatterns = [path('mcp/', include(mcp.urls))]\n")
    (tmp_path / "slashed_settings.py").write_text("from snippetsite.settings import *  # noqa: F403\n"
                                                  "ROOT_URLCONF = 'slashed'\n")
    env = _env(tmp_path / "db.sqlite3", DJANGO_SETTINGS_MODULE="slashed_settings")
    env["PYTHONPATH"] += os.pathsep + str(tmp_path)
    slashed = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT, env=env, capture_output=True,
                             text=True, timeout=TIMEOUT)
    assert "minimcp.W003" in slashed.stderr and 'path("mcp", include(mcp.urls))' in slashed.stderr
    as_shipped = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT, capture_output=True, text=True,
                                env=_env(tmp_path / "db.sqlite3"), timeout=TIMEOUT)
    assert as_shipped.returncode == 0 and "minimcp.W" not in as_shipped.stderr + as_shipped.stdout


# --- a project that was never migrated ------------------------------------------------------------------
SERVE = ("import django; django.setup()\nfrom django.core.wsgi import get_wsgi_application\n"
         "from minimcp.httpd import WSGIServer\nserver = WSGIServer(get_wsgi_application(), '127.0.0.1', 0)\n"
         "print(f'Serving http://127.0.0.1:{server.port}/', flush=True)\nserver.run()\n")


def test_a_request_before_migrate_says_to_run_migrate(tmp_path: Path) -> None:
    env = _env(tmp_path / "fresh.sqlite3", DJANGO_SETTINGS_MODULE="snippetsite.settings")
    env["PYTHONPATH"] += os.pathsep + str(PROJECT)
    migrated = subprocess.run([sys.executable, "manage.py", "migrate", "auth"], cwd=PROJECT, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)  # the site's own tables, not minimcp's
    assert migrated.returncode == 0, migrated.stderr
    with server_process([sys.executable, "-c", SERVE], env, cwd=PROJECT) as server:
        reply = requests.post(server.base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=TIMEOUT,
                              headers={"Authorization": "Bearer mcp_anything", "Accept": "application/json, text/event-stream"})
        assert reply.status_code == 503
        assert "run `python manage.py migrate`" in reply.json()["error"]["message"]
        assert "minimcp_apitoken" in reply.json()["error"]["message"]


# --- the caller's address reaches the views ----------------------------------------------------------------
@ERAS
def test_a_view_that_trusts_one_address_treats_tool_calls_as_the_callers_web_requests(site: Snippets, mode: str) -> None:
    assert site.http("bob", ELSEWHERE).get(site.base + "/api/maintenance/", timeout=TIMEOUT).status_code == 401
    basic = ("bob", "bob")
    assert requests.get(site.base + "/api/maintenance/", auth=basic, timeout=TIMEOUT).status_code == 200
    elsewhere = requests.Session()
    elsewhere.mount("http://", _BoundTo(ELSEWHERE))
    assert elsewhere.get(site.base + "/api/maintenance/", auth=basic, timeout=TIMEOUT).status_code == 403
    with site.client("bob", mode, address=ELSEWHERE) as client:
        assert "maintenance_get" not in {tool.name for tool in client.list_tools().tools}
        with pytest.raises(MCPError, match="Permission denied: tool 'maintenance_get'"):
            client.call_tool("maintenance_get", {})
    with site.client("bob", mode) as client:
        assert answer(client.call_tool("maintenance_get", {}))["address"] == "127.0.0.1"


def test_forwarding_headers_reach_the_view_only_as_the_mcp_request_had_them(site: Snippets) -> None:
    with site.client("bob", address=ELSEWHERE) as client:
        assert answer(client.call_tool("origin_get", {})) == {"address": ELSEWHERE, "forwarded_for": None}
    with site.client("bob", address=ELSEWHERE, **{"X-Forwarded-For": "203.0.113.9"}) as client:
        assert answer(client.call_tool("origin_get", {})) == {"address": ELSEWHERE, "forwarded_for": "203.0.113.9"}


def test_a_throttle_keyed_by_address_counts_each_callers_address(tmp_path: Path) -> None:
    with running_snippets(tmp_path, SNIPPETS_ADDRESS_RATE="2/hour") as running:
        with running.client("bob", address=ELSEWHERE) as client:
            for _ in range(2):
                assert not client.call_tool("origin_get", {}).is_error
            throttled = client.call_tool("origin_get", {})
            assert throttled.is_error and "answered 429 Too Many Requests" in text(throttled)
        with running.client("bob") as client:  # the same user from another address: a budget of its own
            assert answer(client.call_tool("origin_get", {}))["address"] == "127.0.0.1"
