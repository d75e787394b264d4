"""Custom routes beside the MCP endpoint are keyed by path and method, over real HTTP.

Protection of these routes (DNS rebinding, transport security) is tested in ``test_security.py``.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import requests
from werkzeug.wrappers import Response

from minimcp.server import MCPServer


def notes_server() -> MCPServer:
    """``/notes`` has a reader and a writer with a handler each, as a REST resource does."""
    mcp = MCPServer("Notes")
    notes: list[str] = ["first"]

    @mcp.custom_route("/notes", methods=["GET"])
    def read_notes(request: Any) -> Any:
        return Response("\n".join(notes), headers={"X-Count": str(len(notes))})

    @mcp.custom_route("/notes", methods=["post", "PUT"])  # methods in any case
    def write_note(request: Any) -> Any:
        notes.append(request.get_data(as_text=True))
        return Response("stored", status=201)

    # Slashes around the path do not matter; the official positional name and include_in_schema are taken.
    @mcp.custom_route("health/", ["GET"], "health", False)
    def health(request: Any) -> Any:
        return Response("ok")

    return mcp


@pytest.fixture
def base(serve_http: Callable[..., str]) -> str:
    return serve_http(notes_server()).rsplit("/mcp", 1)[0]


def test_two_routes_on_one_path_each_serve_their_methods(base: str) -> None:
    """Before, the second decorator replaced the first: GET /notes answered 405."""
    assert requests.get(base + "/notes", timeout=10).text == "first"
    written = requests.post(base + "/notes", data="second", timeout=10)
    assert (written.status_code, written.text) == (201, "stored")
    assert requests.put(base + "/notes", data="third", timeout=10).status_code == 201
    assert requests.get(base + "/notes", timeout=10).text == "first\nsecond\nthird"


@pytest.mark.parametrize("method", ["DELETE", "PATCH", "OPTIONS"])
def test_another_method_on_a_known_path_is_405_with_allow(base: str, method: str) -> None:
    response = requests.request(method, base + "/notes", timeout=10)
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, HEAD, POST, PUT"


def test_head_is_answered_by_the_get_route(base: str) -> None:
    response = requests.head(base + "/notes", timeout=10)
    assert response.status_code == 200
    assert response.headers["X-Count"] == "1"
    assert response.content == b""


def test_allow_lists_only_what_the_path_serves(base: str) -> None:
    response = requests.post(base + "/health", timeout=10)
    assert (response.status_code, response.headers["Allow"]) == (405, "GET, HEAD")
    assert requests.get(base + "/health", timeout=10).text == "ok"


def test_an_unknown_path_is_404(base: str) -> None:
    assert requests.get(base + "/nothing", timeout=10).status_code == 404


def test_a_later_route_for_the_same_path_and_method_replaces_the_earlier(serve_http: Callable[..., str]) -> None:
    mcp = MCPServer("Twice")

    @mcp.custom_route("/v", methods=["GET"])
    def old(request: Any) -> Any:
        return Response("old")

    @mcp.custom_route("/v", methods=["GET"])
    def new(request: Any) -> Any:
        return Response("new")

    base = serve_http(mcp).rsplit("/mcp", 1)[0]
    assert requests.get(base + "/v", timeout=10).text == "new"
