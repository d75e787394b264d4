"""Tools from what a Django project already has: models (``minimcp.django.toolsets``) and Django
REST framework views (``minimcp.django.drf``), in the example project ``examples/django_library``
served in a subprocess on a loopback port with a fresh SQLite database.

Its users: alice (a superuser), bob (view, add and change books and authors, add reviews; no
delete permission) and carol (no permission). Each test signs in with a user's API token, or a
DRF token, and talks MCP over real HTTP in both eras.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import requests

from conftest import EXAMPLES, TIMEOUT, server_process
from host_support import ERAS, ROOT, answer, structured, text
from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.jsonrpc import MCPError
from minimcp.types import ElicitResult

PROJECT = EXAMPLES / "django_library"
USERS = ("alice", "bob", "carol")
EVERY_TOOL = {"list_authors", "get_author", "create_author", "list_books", "get_book", "create_book", "update_book",
              "delete_book", "list_my_reviews", "get_my_review", "create_my_review", "api_books_list",
              "api_books_retrieve", "api_books_create", "api_books_partial_update", "api_books_destroy", "api_books_blurb",
              "api_reviews_get", "api_reviews_post", "suggestions_get", "suggestions_post"}


class Library:
    """The running project: its base URL and each user's tokens (minimcp's and DRF's)."""

    def __init__(self, base: str, banner: str) -> None:
        self.base = base
        self.url = base + "/mcp/"
        self.tokens = dict(re.findall(r"(\w+)'s API token \(shown once\): (\S+)", banner))
        self.drf_tokens = dict(re.findall(r"(\w+)'s DRF token: (\S+)", banner))

    def client(self, user: str, mode: str = "auto", **options: Any) -> Client:
        return self.client_with(f"Bearer {self.tokens[user]}", mode, **options)

    def client_with(self, authorization: str, mode: str = "auto", **options: Any) -> Client:
        http = requests.Session()
        http.headers["Authorization"] = authorization
        return Client(streamable_http_client(self.url, http_client=http), mode=mode, **options)


def _env(database: Path, **settings: str) -> dict[str, str]:
    return {**os.environ, "LIBRARY_DATABASE": str(database), "PYTHONPATH": str(ROOT), **settings}


@contextlib.contextmanager
def running_library(directory: Path, **settings: str) -> Iterator[Library]:
    command = [sys.executable, "manage.py", "demo", "--port", "0"]
    with server_process(command, _env(directory / "library.sqlite3", **settings), cwd=PROJECT) as server:
        yield Library(server.base, "".join(server.banner))


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    with running_library(tmp_path_factory.mktemp("library")) as site:
        yield site


def titles(result: Any) -> list[str]:
    return [book["title"] for book in structured(result)["results"]]


# --- who sees what --------------------------------------------------------------------------------
@ERAS
def test_each_user_sees_exactly_the_tools_their_permissions_allow(library: Library, mode: str) -> None:
    seen = {}
    for user in USERS:
        with library.client(user, mode) as client:
            seen[user] = {tool.name for tool in client.list_tools().tools}
    assert seen["alice"] == EVERY_TOOL
    assert seen["bob"] == EVERY_TOOL - {"delete_book", "api_books_destroy"}
    # carol has no model permission: the book API keeps view_book although DRF's DjangoModelPermissions
    # lets any signed-in user read; IsAuthenticated alone decides for the reviews API (published with
    # model_permissions=False) and the suggestions, which name no model
    assert seen["carol"] == {"api_reviews_get", "api_reviews_post", "suggestions_get", "suggestions_post"}


def test_a_call_without_the_permission_is_refused_and_the_server_keeps_serving(library: Library) -> None:
    with library.client("carol") as client:
        with pytest.raises(MCPError, match=r"Permission denied: tool .* requires the permission library\.view_book$"):
            client.call_tool("list_books", {})
        with pytest.raises(MCPError, match=r"requires the permission library\.add_book and what BookViewSet's "
                                           r"permission classes allow \(DjangoModelPermissions\)$"):
            client.call_tool("api_books_create", {"title": "Mine", "author": 1, "year": 2000})
        with pytest.raises(MCPError, match=r"requires the permission library\.view_book and what BookViewSet's"):
            client.call_tool("api_books_blurb", {"pk": 3})
    with library.client("bob") as client:
        assert answer(client.call_tool("api_books_retrieve", {"pk": 1}))["title"] == "The Dispossessed"
        blurb = answer(client.call_tool("api_books_blurb", {"pk": 3}))  # a ViewSet's own @action
        assert blurb == {"blurb": "Invisible Cities (1972), by Italo Calvino"}


def test_schemas_and_descriptions_come_from_the_model_fields(library: Library) -> None:
    with library.client("bob") as client:
        tools = {tool.name: tool for tool in client.list_tools().tools}
    create = tools["create_book"].input_schema
    assert create["required"] == ["title", "author", "year"]
    assert create["properties"]["year"]["type"] == "integer"
    assert create["properties"]["year"]["description"] == "Year published (the first edition's year)"
    assert all(choice in str(create["properties"]["genre"]) for choice in ("novel", "poetry", "essay"))
    listing = tools["list_books"].input_schema["properties"]
    assert set(listing) == {"author", "genre", "search", "order_by", "page", "page_size"}
    assert "-year" in str(listing["order_by"])
    assert "A book in the library's catalogue" in tools["list_books"].description
    assert listing["search"]["description"] == "Text to look for in title, author name"
    assert tools["list_books"].annotations.read_only_hint is True
    assert tools["update_book"].annotations.destructive_hint is True


# --- the model tools --------------------------------------------------------------------------------
@ERAS
def test_list_filters_searches_orders_and_pages_within_the_limit(library: Library, mode: str) -> None:
    with library.client("bob", mode) as client:
        assert titles(client.call_tool("list_books", {"author": 2})) == ["Invisible Cities"]
        assert titles(client.call_tool("list_books", {"search": "calvino"})) == ["Invisible Cities"]  # author__name
        assert titles(client.call_tool("list_books", {"search": "THE", "order_by": "-year"})) == [
            "The Dispossessed", "The Left Hand of Darkness"]
        page = structured(client.call_tool("list_books", {"order_by": "year", "page_size": 2, "page": 2}))
        assert page["page"] == 2 and [b["title"] for b in page["results"]] == ["The Dispossessed"]
        assert page["count"] >= 3
        capped = structured(client.call_tool("list_books", {"page_size": 500}))
        assert capped["page_size"] == 10  # BookTools.page_size is the most a page holds
        refused = client.call_tool("list_books", {"order_by": "owner"})
        assert refused.is_error and "order_by" in text(refused)


def test_create_get_and_update_validate_through_the_model(library: Library) -> None:
    with library.client("bob") as client:
        made = structured(client.call_tool("create_book", {"title": "Kindred", "author": 1, "year": 1979}))
        assert made["genre"] == "novel"  # the model's default for what the caller left out
        assert structured(client.call_tool("get_book", {"id": made["id"]})) == made
        changed = structured(client.call_tool("update_book", {"id": made["id"], "year": 1980}))
        assert changed == {**made, "year": 1980}
        invalid = client.call_tool("create_book", {"title": "x" * 300, "author": 999, "year": 1})
        assert invalid.is_error
        assert "title: Ensure this value has at most 200 characters" in text(invalid)
        assert "author: No author with id 999 that you may reach." in text(invalid)
        missing = client.call_tool("get_book", {"id": 999999})
        assert missing.is_error and "No book with id 999999" in text(missing) and "list_books" in text(missing)


def test_get_queryset_and_before_save_decide_per_user(library: Library) -> None:
    with library.client("bob") as bob, library.client("alice") as alice:
        mine = structured(bob.call_tool("create_my_review", {"book": 3, "stars": 4, "text": "dreamlike"}))
        structured(alice.call_tool("create_my_review", {"book": 3, "stars": 2, "text": "too short"}))
        assert [r["text"] for r in structured(bob.call_tool("list_my_reviews", {}))["results"]] == ["dreamlike"]
        assert "dreamlike" not in str(structured(alice.call_tool("list_my_reviews", {})))
        hidden = alice.call_tool("get_my_review", {"id": mine["id"]})
        assert hidden.is_error and f"No review with id {mine['id']}" in text(hidden)
        drf = answer(alice.call_tool("api_reviews_get", {}))
        assert {"text": "dreamlike", "reviewer": "bob"}.items() <= next(r for r in drf if r["id"] == mine["id"]).items()


@ERAS
def test_delete_asks_first_and_keeps_the_book_on_decline(library: Library, mode: str) -> None:
    asked: list[str] = []
    answers = iter(["decline", "accept"])

    def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        action = next(answers)
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)

    with library.client("alice", mode, elicitation_callback=answer) as client:
        book = structured(client.call_tool("create_book", {"title": f"Doomed {mode}", "author": 2, "year": 2001}))
        assert text(client.call_tool("delete_book", {"id": book["id"]})) == f"Kept book {book['id']}."
        assert structured(client.call_tool("get_book", {"id": book["id"]}))["title"] == f"Doomed {mode}"
        assert text(client.call_tool("delete_book", {"id": book["id"]})) == f"Deleted book {book['id']}."
        assert client.call_tool("get_book", {"id": book["id"]}).is_error
    assert asked == [f"Delete book {book['id']} (Doomed {mode})?"] * 2


# --- DRF views ----------------------------------------------------------------------------------------
@ERAS
def test_viewset_actions_run_through_the_view_and_answer_its_serializer_output(library: Library, mode: str) -> None:
    with library.client("bob", mode) as client:
        listed = client.call_tool("api_books_list", {"search": "left", "ordering": "-year"})
        assert not listed.is_error
        assert '"title": "The Left Hand of Darkness"' in text(listed)
        made = client.call_tool("api_books_create", {"title": f"Via DRF {mode}", "author": 2, "year": 1990})
        assert not made.is_error, text(made)
        assert '"genre": "novel"' in text(made)
        book_id = int(re.search(r'"id": (\d+)', text(made))[1])  # type: ignore[index]
        patched = client.call_tool("api_books_partial_update", {"pk": book_id, "genre": "essay"})
        assert '"genre": "essay"' in text(patched) and f'"title": "Via DRF {mode}"' in text(patched)
        gone = client.call_tool("api_books_retrieve", {"pk": 999999})
        assert gone.is_error and "BookViewSet (GET) answered 404 Not Found" in text(gone)
    # the REST API itself sees the change: the tool went through the view
    api = requests.get(f"{library.base}/api/books/{book_id}/", timeout=TIMEOUT,
                       headers={"Authorization": f"Token {library.drf_tokens['bob']}"})
    assert api.json()["genre"] == "essay"
    with library.client("alice", mode) as client:
        assert text(client.call_tool("api_books_destroy", {"pk": book_id})) == "BookViewSet (DELETE): 204 No Content"
    assert requests.get(f"{library.base}/api/books/{book_id}/", timeout=TIMEOUT,
                        headers={"Authorization": f"Token {library.drf_tokens['bob']}"}).status_code == 404


def test_serializer_validation_errors_come_back_as_an_error_result_with_its_messages(library: Library) -> None:
    with library.client("carol") as client:
        failed = client.call_tool("api_reviews_post", {"book": 1, "stars": 9, "text": "Big spoiler inside"})
        assert failed.is_error
        assert "ReviewList (POST) answered 400 Bad Request: " in text(failed)
        assert '"stars": ["Ensure this value is less than or equal to 5."]' in text(failed)
        assert '"text": ["Reviews may not contain spoilers."]' in text(failed)
        posted = client.call_tool("api_reviews_post", {"book": 1, "stars": 5, "text": "Superb"})
        assert not posted.is_error and '"reviewer": "carol"' in text(posted)


def test_a_plain_apiview_takes_its_schema_from_the_serializer_it_is_published_with(library: Library) -> None:
    with library.client("carol") as client:
        tools = {tool.name: tool for tool in client.list_tools().tools}
        schema = tools["suggestions_post"].input_schema
        assert schema["required"] == ["title"] and set(schema["properties"]) == {"title", "reason"}
        assert schema["properties"]["title"]["description"] == "Title; the book you would like us to buy"
        assert tools["suggestions_get"].input_schema["properties"] == {}
        assert answer(client.call_tool("suggestions_get", {}))["authors"] >= 2
        thanks = answer(client.call_tool("suggestions_post", {"title": "Dune"}))
        assert thanks == {"thanks": "carol suggested Dune"}
        too_long = client.call_tool("suggestions_post", {"title": "x" * 201})
        assert too_long.is_error and "Ensure this field has no more than 200 characters." in text(too_long)


def test_the_views_throttles_apply_to_tool_calls(tmp_path: Path) -> None:
    with running_library(tmp_path, LIBRARY_THROTTLE="2/hour") as site, site.client("bob") as client:
        for stars in (3, 4):
            assert not client.call_tool("api_reviews_post", {"book": 2, "stars": stars}).is_error
        throttled = client.call_tool("api_reviews_post", {"book": 2, "stars": 5})
        assert throttled.is_error and "answered 429 Too Many Requests" in text(throttled) and "throttled" in text(throttled)
        assert not client.call_tool("api_books_list", {}).is_error  # other views are not throttled


def test_the_endpoint_accepts_the_projects_drf_authentication(library: Library) -> None:
    with library.client_with(f"Token {library.drf_tokens['bob']}") as client:
        names = {tool.name for tool in client.list_tools().tools}
        assert "update_book" in names and "delete_book" not in names
        assert structured(client.call_tool("get_author", {"id": 1}))["name"] == "Ursula K. Le Guin"
    refused = requests.post(library.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=TIMEOUT,
                            headers={"Authorization": "Token not-a-token", "Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401


def test_the_endpoint_takes_the_drf_authentication_classes_it_is_given(tmp_path: Path) -> None:
    basic = "rest_framework.authentication.BasicAuthentication"
    with running_library(tmp_path, LIBRARY_MCP_AUTH=basic) as site:
        with site.client_with("Basic Ym9iOmJvYg==") as client:  # bob:bob
            assert structured(client.call_tool("get_book", {"id": 3}))["title"] == "Invisible Cities"
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for refused in ("Basic Ym9iOndyb25n", f"Token {site.drf_tokens['bob']}"):  # a wrong password; not listed
            reply = requests.post(site.url, json=ping, timeout=TIMEOUT, headers={
                "Authorization": refused, "Accept": "application/json, text/event-stream"})
            assert reply.status_code == 401, refused


# --- the official SDK's client --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_lists_and_calls_as_a_user_without_delete_permission(library: Library, mode: str) -> None:
    import httpx2
    import mcp as official
    from mcp.client.streamable_http import streamable_http_client as official_http
    from mcp.shared.exceptions import MCPError as OfficialError

    async def main() -> tuple[set[str], Any, Any, str]:
        headers = {"Authorization": f"Bearer {library.tokens['bob']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http, \
                official.Client(official_http(library.url, http_client=http), mode=mode) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            books = await client.call_tool("list_books", {"order_by": "year"})
            api = await client.call_tool("api_books_retrieve", {"pk": 3})
            try:
                await client.call_tool("delete_book", {"id": 1})
                refusal = "called"
            except OfficialError as refused:
                refusal = str(refused)
            return names, books, api, refusal

    names, books, api, refusal = anyio.run(main)
    assert names == EVERY_TOOL - {"delete_book", "api_books_destroy"}
    assert books.structured_content["results"][0]["title"] == "The Left Hand of Darkness"
    assert '"title": "Invisible Cities"' in api.content[0].text
    assert "Permission denied: tool 'delete_book' requires the permission library.delete_book" in refusal


# --- declaring, and staying optional ----------------------------------------------------------------
def _manage(project: Path, code: str, database: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=project, capture_output=True,
                          text=True, timeout=120, env={**_env(database), "NOTES_DATABASE": str(database),
                                                       "PYTHONPATH": os.pathsep.join([str(ROOT), str(project)])})


def test_a_mistake_in_a_toolset_or_a_publication_fails_at_start_up_with_its_name(tmp_path: Path) -> None:
    code = ("from library.models import Book\nfrom library.api import ReviewList\n"
            "from minimcp.django.toolsets import ModelToolset\nfrom minimcp.django.drf import publish\n"
            "from minimcp.django import MCP\n"
            "class Wrong(ModelToolset):\n    model = Book\n    filters = ['colour']\n"
            "for attempt in (lambda: Wrong.register(MCP()), lambda: publish(ReviewList, methods=['delete'], mcp=MCP())):\n"
            "    try:\n        attempt()\n    except ValueError as e:\n        print(e)\n")
    done = _manage(PROJECT, code, tmp_path / "db.sqlite3")
    assert done.returncode == 0, done.stderr
    assert "Wrong.filters names ['colour'], which Book does not have" in done.stdout
    assert "ReviewList does not handle ['delete']; it handles ['get', 'post']" in done.stdout


def test_rest_framework_is_imported_only_where_it_is_used(tmp_path: Path) -> None:
    code = ("import sys\nimport minimcp.django.toolsets, minimcp.django.server\nfrom minimcp.django import mcp\n"
            "mcp.list_tools()\nprint('rest_framework' in sys.modules)\n")
    done = _manage(EXAMPLES / "django_notes", code, tmp_path / "notes.sqlite3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "False"
