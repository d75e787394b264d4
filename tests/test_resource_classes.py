"""The official resource classes at their official path (``minimcp.server.mcpserver.resources``:
``FileResource``, ``TextResource``, ``BinaryResource``, ``DirectoryResource``, ``HttpResource``,
``FunctionResource.from_function``), a resource function's dict or list as ``indent=2`` JSON, and
the WSGI app's ``add_middleware``; read over real HTTP in both eras, and compared with what the
official SDK makes of the same resources."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Callable

import anyio
import pytest
import requests
from conftest import MODES, legacy_handshake
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.wrappers import Request, Response

from minimcp import Client, MCPError
from minimcp.server.mcpserver import MCPServer
from minimcp.server.mcpserver.resources import (
    BinaryResource,
    DirectoryResource,
    FileResource,
    FunctionResource,
    HttpResource,
    TextResource,
)
from minimcp.types import INTERNAL_ERROR


def _files(tmp_path: Path) -> Path:
    (tmp_path / "notes.md").write_text("# Notes\ncafé", encoding="utf-8")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("deep")
    return tmp_path


def _register(mcp: Any, root: Path, http_url: str | None = None) -> None:
    """The same resources, built with the keyword spelling both SDKs accept."""
    mcp.add_resource(FileResource(uri="file:///notes.md", path=root / "notes.md", mime_type="text/markdown"))
    mcp.add_resource(FileResource(uri="file:///logo.png", path=root / "logo.png", mime_type="image/png"))
    mcp.add_resource(TextResource(uri="text://hello", text="hello", name="hello"))
    mcp.add_resource(BinaryResource(uri="bin://raw", data=b"\x00\xff", mime_type="application/octet-stream"))
    mcp.add_resource(DirectoryResource(uri="dir://all", path=root, recursive=True))
    mcp.add_resource(FileResource(uri="file:///missing", path=root / "missing.txt"))


@MODES
def test_the_resource_classes_read_over_http(serve_http: Callable[..., str], tmp_path: Path, mode: str,
                                             version: str) -> None:
    mcp = MCPServer("files")
    _register(mcp, _files(tmp_path))
    with Client(serve_http(mcp), mode=mode) as client:
        listed = {str(r.uri): r for r in client.list_resources().resources}
        assert listed["file:///notes.md"].mime_type == "text/markdown" and listed["text://hello"].name == "hello"
        assert listed["dir://all"].mime_type == "application/json"
        assert client.read_resource("file:///notes.md").contents[0].text == "# Notes\ncafé"
        png = client.read_resource("file:///logo.png").contents[0]
        assert base64.b64decode(png.blob) == b"\x89PNG\x00\x01" and png.mime_type == "image/png"
        assert base64.b64decode(client.read_resource("bin://raw").contents[0].blob) == b"\x00\xff"
        listing = json.loads(client.read_resource("dir://all").contents[0].text)
        assert sorted(listing["files"]) == ["logo.png", "notes.md", "sub/deep.txt"]
        with pytest.raises(MCPError) as missing:
            client.read_resource("file:///missing")
        assert (missing.value.code, missing.value.message) == (INTERNAL_ERROR, "Error reading resource file:///missing")
        assert client.read_resource("text://hello").contents[0].text == "hello"  # still serving


def test_the_same_resources_read_as_the_official_sdk_reads_them(tmp_path: Path) -> None:
    from mcp import Client as OfficialClient
    from mcp.server.mcpserver import MCPServer as OfficialServer
    from mcp.server.mcpserver import resources as official

    root = _files(tmp_path)
    uris = ["file:///notes.md", "file:///logo.png", "text://hello", "bin://raw", "dir://all", "json://dict"]

    def data() -> dict[str, Any]:
        return {"a": [1, 2], "b": {"c": None}}

    theirs = OfficialServer("files")
    for made in (official.FileResource(uri="file:///notes.md", path=root / "notes.md", mime_type="text/markdown"),
                 official.FileResource(uri="file:///logo.png", path=root / "logo.png", mime_type="image/png"),
                 official.TextResource(uri="text://hello", text="hello", name="hello"),
                 official.BinaryResource(uri="bin://raw", data=b"\x00\xff", mime_type="application/octet-stream"),
                 official.FunctionResource.from_function(data, "json://dict")):
        theirs.add_resource(made)
    ours = MCPServer("files")
    _register(ours, root)
    ours.add_resource(FunctionResource.from_function(data, "json://dict"))

    async def official_reads() -> dict[str, Any]:
        async with OfficialClient(theirs, mode="legacy") as client:
            return {uri: (await client.read_resource(uri)).contents[0].model_dump(mode="json")
                    for uri in uris if uri != "dir://all"}

    expected = anyio.run(official_reads)
    with Client(ours, mode="legacy") as client:
        for uri, contents in expected.items():
            assert client.read_resource(uri).contents[0].model_dump(mode="json") == contents, uri
    assert expected["json://dict"]["text"] == json.dumps(data(), indent=2)


@MODES
def test_a_resource_function_returning_a_dict_or_list_is_indented_json(connect: Callable[..., Client], mode: str,
                                                                       version: str) -> None:
    mcp = MCPServer("json")

    @mcp.resource("config://app")
    def config() -> dict[str, Any]:
        return {"debug": False, "tags": ["a", "b"]}

    @mcp.resource("users://{team}")
    def users(team: str) -> list[str]:
        return [f"{team}-1", f"{team}-2"]

    with connect(mcp, mode=mode) as client:
        assert client.read_resource("config://app").contents[0].text == json.dumps(config(), indent=2)
        assert client.read_resource("users://red").contents[0].text == '[\n  "red-1",\n  "red-2"\n]'


def test_the_classes_refuse_what_they_cannot_serve(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        FileResource(uri="file:///x", path="relative.txt")
    with pytest.raises(ValueError):
        FileResource(uri="file:///x", path=tmp_path / "x", encoding="no-such-codec")
    with pytest.raises(ValueError):
        DirectoryResource(uri="dir://x", path="relative")
    with pytest.raises(ValueError):
        FunctionResource.from_function(lambda: "x", "lambda://x")
    assert FileResource(uri="file:///x", path=tmp_path / "x", mime_type="text/plain; charset=latin-1").encoding == "latin-1"
    assert FileResource(uri="file:///x", path=tmp_path / "x", mime_type="application/pdf").encoding is None


def test_an_http_resource_reads_its_url(serve_wsgi: Callable[[Any], str]) -> None:
    @Request.application
    def upstream(request: Request) -> Response:
        return Response(json.dumps({"path": request.path}), content_type="application/json")

    base = serve_wsgi(upstream)
    mcp = MCPServer("http")
    mcp.add_resource(HttpResource(uri="remote://status", url=base + "/status"))
    mcp.add_resource(HttpResource(uri="remote://gone", url=base.rsplit(":", 1)[0] + ":9/none", timeout=5))
    with Client(mcp, mode="legacy") as client:
        assert json.loads(client.read_resource("remote://status").contents[0].text) == {"path": "/status"}
        with pytest.raises(MCPError) as unreachable:
            client.read_resource("remote://gone")
        assert unreachable.value.code == INTERNAL_ERROR


def test_add_middleware_wraps_the_wsgi_app(serve_wsgi: Callable[[Any], str]) -> None:
    mcp = MCPServer("wrapped")
    seen: list[str] = []

    @mcp.tool()
    def whoami() -> str:
        return "ok"

    @mcp.custom_route("/health", ["GET"])
    def health(request: Request) -> Response:
        return Response(request.remote_addr or "")

    class Stamp:
        """A WSGI middleware with its own signature: (app, header)."""

        def __init__(self, app: Any, header: str) -> None:
            self.app, self.header = app, header

        def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
            seen.append(environ["PATH_INFO"])

            def stamped(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                return start_response(status, [*headers, (self.header, "yes")], exc_info)

            return self.app(environ, stamped)

    app = mcp.streamable_http_app()
    app.add_middleware(ProxyFix, x_for=1)
    app.add_middleware(Stamp, header="X-Stamped")
    base = serve_wsgi(app)
    health_response = requests.get(base + "/health", headers={"X-Forwarded-For": "203.0.113.9"}, timeout=30)
    assert health_response.text == "203.0.113.9" and health_response.headers["X-Stamped"] == "yes"
    session = legacy_handshake(base + app.path)
    assert session.call_tool("whoami")["content"][0]["text"] == "ok"
    assert seen[0] == "/health" and app.path in seen
    app.close()


def test_an_asgi_middleware_is_refused_with_the_porting_hint() -> None:
    class CORSLike:
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await self.app(scope, receive, send)

    app = MCPServer("asgi").streamable_http_app()
    with pytest.raises(TypeError, match="ASGI middleware"):
        app.add_middleware(CORSLike)
    app.close()
