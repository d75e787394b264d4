"""What the official SDK 2.3.0's stories and examples need once ported by the rule: a public way to
remove a resource, the threading side of the anyio porting table (cancelling a call, bounded waits
on a listen stream), and the HTTP app's ``debug=`` and custom-route errors. Each runs in memory and
over a real loopback HTTP server, in both eras where the era matters.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import requests
from werkzeug.wrappers import Response

from minimcp import Client, MCPError, types
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.server.mcpserver.exceptions import ResourceNotFoundError
from minimcp.server.mcpserver.resources import FunctionResource

ERAS = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])


# --- removing a resource ---------------------------------------------------------------------------


def _board() -> MCPServer:
    """The stickynotes shape: tools add and remove one resource per note at runtime."""
    mcp = MCPServer("board")
    notes: dict[str, str] = {}

    @mcp.tool()
    def add_note(note_id: str, text: str, ctx: Context) -> str:
        notes[note_id] = text
        mcp.add_resource(FunctionResource(uri=f"note:///{note_id}", name=note_id, fn=lambda: notes[note_id]))
        ctx.session.send_resource_list_changed()
        return f"note:///{note_id}"

    @mcp.tool()
    def remove_note(note_id: str, ctx: Context) -> bool:
        mcp.remove_resource(f"note:///{note_id}")
        ctx.session.send_resource_list_changed()
        return notes.pop(note_id, None) is not None

    @mcp.resource("shelf://{name}")
    def shelf(name: str) -> str:
        return name

    return mcp


@ERAS
def test_remove_resource_unregisters_a_runtime_resource(connect: Callable[..., Client], mode: str) -> None:
    with connect(_board(), mode=mode) as client:
        uri = client.call_tool("add_note", {"note_id": "1", "text": "milk"}).structured_content["result"]
        assert [str(r.uri) for r in client.list_resources().resources] == [uri]
        assert client.read_resource(uri).contents[0].text == "milk"

        assert client.call_tool("remove_note", {"note_id": "1"}).structured_content == {"result": True}
        assert client.list_resources().resources == []
        with pytest.raises(MCPError) as unknown:
            client.read_resource(uri)
        assert unknown.value.code == types.INVALID_PARAMS


def test_remove_resource_takes_a_template_and_names_what_is_unknown() -> None:
    mcp = _board()
    mcp.remove_resource("shelf://{name}")
    assert mcp.list_resource_templates() == []
    with pytest.raises(ResourceNotFoundError, match="Unknown resource: note:///9"):
        mcp.remove_resource("note:///9")


def test_the_official_stickynotes_private_path_removes_the_resource() -> None:
    """The official story's own line, kept so that story ports unchanged."""
    mcp = _board()
    mcp.add_resource(FunctionResource(uri="note:///1", name="1", fn=lambda: "x"))
    mcp._resource_manager._resources.pop("note:///1", None)
    assert mcp.list_resources() == []


# --- the HTTP app: debug=, custom route responses, the endpoint's own path ----------------------------


def _routes(**server_options: Any) -> MCPServer:
    mcp = MCPServer("routes", **server_options)

    @mcp.custom_route("/crash", methods=["GET"])
    def crash(request: Any) -> Any:
        raise RuntimeError("secret path /etc/x")

    @mcp.custom_route("/starlette", methods=["GET"])
    def ported(request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok"})

    @mcp.custom_route("/text", methods=["GET"])
    def text(request: Any) -> Any:
        return "ok"

    return mcp


def test_a_crashing_route_answers_500_without_its_text(serve_http: Callable[..., str]) -> None:
    base = serve_http(_routes()).rsplit("/mcp", 1)[0]
    response = requests.get(base + "/crash", timeout=10)
    assert (response.status_code, response.text) == (500, "Internal Server Error")


@pytest.mark.parametrize("where", ["app", "server"])
def test_debug_answers_a_crashing_route_with_its_traceback(serve_http: Callable[..., str], where: str) -> None:
    """The official ``streamable_http_app(debug=True)`` / ``MCPServer(debug=True)``."""
    url = serve_http(_routes(), debug=True) if where == "app" else serve_http(_routes(debug=True))
    response = requests.get(url.rsplit("/mcp", 1)[0] + "/crash", timeout=10)
    assert response.status_code == 500
    assert response.text.startswith("Traceback (most recent call last)")
    assert "RuntimeError: secret path /etc/x" in response.text


def test_a_starlette_response_is_refused_with_what_to_return(serve_http: Callable[..., str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    base = serve_http(_routes()).rsplit("/mcp", 1)[0]
    response = requests.get(base + "/starlette", timeout=10)
    assert response.status_code == 500
    assert "custom route /starlette returned starlette.responses.JSONResponse, an ASGI (Starlette) response" \
        in response.text
    assert "from werkzeug.wrappers import Response" in response.text
    assert "custom route /starlette failed" in caplog.text
    plain = requests.get(base + "/text", timeout=10)
    assert plain.status_code == 500 and "builtins.str, not a WSGI response" in plain.text
    assert requests.get(base + "/mcp", timeout=10).status_code != 500  # the endpoint still serves


def test_a_route_on_the_endpoint_path_is_refused_when_the_app_is_built(serve_http: Callable[..., str]) -> None:
    mcp = MCPServer("shadowed")

    @mcp.custom_route("/mcp/", methods=["GET"])
    def status(request: Any) -> Any:
        return Response("up")

    with pytest.raises(ValueError, match=r"'status' is registered on /mcp, the MCP endpoint's own path"):
        mcp.wsgi_app()
    url = serve_http(mcp, streamable_http_path="/rpc")
    assert requests.get(url.rsplit("/rpc", 1)[0] + "/mcp", timeout=10).text == "up"
