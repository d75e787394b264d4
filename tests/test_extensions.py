"""Extensions (SEP-2133), MCP Apps and vendor methods, through the real client on every transport.

The server program below is served in memory, over Streamable HTTP on a loopback port and as a
stdio subprocess (the ``target`` fixture), in both eras; what each answer must be was measured on
the official SDK 2.3.0 running the same program.
"""

from __future__ import annotations

import runpy
import textwrap
import threading
from pathlib import Path
from typing import Any, Literal

import pytest
from conftest import MODES, legacy_handshake, modern_rpc, rpc, run_docs_program

import minimcp.types as types
from minimcp import Client, MCPError
from minimcp.client import ClientExtension, NotificationBinding, advertise
from minimcp.server import MCPServer
from minimcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, Apps
from minimcp.server.extension import Extension, MethodBinding, ToolBinding
from minimcp.server.lowlevel import Server
from minimcp.server.mcpserver.resources import TextResource

SERVER = textwrap.dedent(
    '''
    from pydantic import Field

    import minimcp.types as types
    from minimcp.server.apps import Apps, client_supports_apps
    from minimcp.server.extension import Extension, MethodBinding, ToolBinding
    from minimcp.server.mcpserver import Context, MCPServer, require_client_extension

    class SearchParams(types.RequestParams):
        query: str
        limit: int = Field(default=3, ge=1, le=25)

    class SearchResult(types.Result):
        items: list[str]

    def suggest(prefix: str) -> str:
        """Suggest a catalog entry."""
        return f"{prefix}-suggestion"

    def search(ctx, params: SearchParams) -> SearchResult:
        require_client_extension(ctx, "com.example/catalog")
        return SearchResult(items=[f"{params.query}-{n}" for n in range(params.limit)])

    def version(ctx, params) -> dict:
        return {"version": ctx.protocol_version}

    class Catalog(Extension):
        identifier = "com.example/catalog"

        def settings(self):
            return {"suggest": True}

        def tools(self):
            return [ToolBinding(fn=suggest, meta={"source": "catalog"}, kwargs={"title": "Suggest"})]

        def methods(self):
            return [MethodBinding("com.example/search", SearchParams, search),
                    MethodBinding("com.example/version", types.RequestParams, version,
                                  protocol_versions=frozenset({"2026-07-28"}))]

        def intercept_tool_call(self, params, ctx, call_next):
            if (params.arguments or {}).get("prefix") == "cached":
                return types.CallToolResult(content=[types.TextContent(type="text", text="from the interceptor")],
                                            structured_content={"result": "from the interceptor"})
            return call_next(ctx)

    apps = Apps()

    @apps.tool(resource_uri="ui://clock/app.html", visibility=["model", "app"], title="Get Time")
    def get_time(ctx: Context) -> str:
        now = "2026-06-26T00:00:00Z"
        return now if client_supports_apps(ctx) else f"The time is {now}."

    apps.add_html_resource("ui://clock/app.html", "<h1>clock</h1>", title="Clock", prefers_border=True)

    mcp = MCPServer("extensions", extensions=[Catalog(), apps])

    if __name__ == "__main__":
        mcp.run()
    '''
)

APPS_CLIENT = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "extensions_server.py"
    path.write_text(SERVER)
    return path


class SearchParams(types.RequestParams):
    query: str
    limit: int = 3


class SearchRequest(types.Request[SearchParams, Literal["com.example/search"]]):
    method: Literal["com.example/search"] = "com.example/search"
    params: SearchParams


class SearchResult(types.Result):
    items: list[str]


class LooseSearch(types.Request[dict[str, Any], Literal["com.example/search"]]):
    """The same method with params no model checked, as a buggy client might send them."""

    method: Literal["com.example/search"] = "com.example/search"
    params: dict[str, Any]


class VersionRequest(types.Request[types.RequestParams, Literal["com.example/version"]]):
    method: Literal["com.example/version"] = "com.example/version"
    params: types.RequestParams = types.RequestParams()


@MODES
def test_contributions_are_served_and_advertised_on_discover_only(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        extensions = client.server_capabilities.extensions
        if mode == "legacy":  # the 2025-11-25 initialize result has no capabilities.extensions
            assert extensions is None
        else:
            assert extensions == {"com.example/catalog": {"suggest": True}, EXTENSION_ID: {}}
        tools = {tool.name: tool for tool in client.list_tools().tools}
        assert tools["suggest"].title == "Suggest" and tools["suggest"].meta == {"source": "catalog"}
        assert client.call_tool("suggest", {"prefix": "mcp"}).content[0].text == "mcp-suggestion"


@MODES
def test_an_interceptor_answers_in_the_tools_place(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        result = client.call_tool("suggest", {"prefix": "cached"})
        assert result.content[0].text == "from the interceptor"
        assert result.structured_content == {"result": "from the interceptor"}
        assert client.call_tool("get_time", {}).content[0].text == "The time is 2026-06-26T00:00:00Z."


@MODES
def test_a_vendor_method_is_served_to_a_client_that_declared_its_extension(target: Any, mode: str,
                                                                           version: str) -> None:
    request = SearchRequest(params=SearchParams(query="mcp", limit=2))
    with Client(target, mode=mode, extensions=[advertise("com.example/catalog")]) as client:
        assert client.session.send_request(request, SearchResult).items == ["mcp-0", "mcp-1"]
    with Client(target, mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            client.session.send_request(request, SearchResult)
    assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.message == "Client did not declare required extension 'com.example/catalog'"
    assert refused.value.data == {"requiredCapabilities": {"extensions": {"com.example/catalog": {}}}}


@MODES
def test_a_method_limited_to_2026_is_unknown_on_a_legacy_connection(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode) as client:
        if mode == "legacy":
            with pytest.raises(MCPError) as unknown:
                client.session.send_request(VersionRequest(), types.Result)
            assert (unknown.value.code, unknown.value.message, unknown.value.data) == \
                (types.METHOD_NOT_FOUND, "Method not found", "com.example/version")
        else:
            answer = client.session.send_request(VersionRequest(), types.Result)
            # the bare Result declares no result_type (as officially): the 2026 wire's stays an extra
            assert answer.model_extra == {"version": version, "resultType": "complete"}


@MODES
def test_apps_binds_a_tool_to_its_ui_resource(target: Any, mode: str, version: str) -> None:
    with Client(target, mode=mode, extensions=[APPS_CLIENT]) as client:
        tool = next(t for t in client.list_tools().tools if t.name == "get_time")
        assert tool.meta == {"ui": {"resourceUri": "ui://clock/app.html", "visibility": ["model", "app"]}}
        listed = next(r for r in client.list_resources().resources if r.uri == "ui://clock/app.html")
        assert (listed.name, listed.title, listed.mime_type) == ("ui://clock/app.html", "Clock", APP_MIME_TYPE)
        contents = client.read_resource("ui://clock/app.html").contents[0]
        assert isinstance(contents, types.TextResourceContents)
        assert (contents.mime_type, contents.text) == (APP_MIME_TYPE, "<h1>clock</h1>")
        assert contents.meta == {"ui": {"prefersBorder": True}}  # where a host reads the frame's settings
        assert client.call_tool("get_time", {}).content[0].text == "2026-06-26T00:00:00Z"
    with Client(target, mode=mode, extensions=[advertise(EXTENSION_ID)]) as client:  # no mimeTypes: text only
        assert client.call_tool("get_time", {}).content[0].text == "The time is 2026-06-26T00:00:00Z."


def test_the_extension_map_rides_discover_and_never_initialize(server_file: Path,
                                                               serve_http: Any) -> None:
    url = serve_http(runpy.run_path(str(server_file))["mcp"])
    legacy = legacy_handshake(url).initialize_result
    assert legacy["capabilities"]["tools"] == {"listChanged": False}
    assert "extensions" not in legacy["capabilities"]
    discovered = modern_rpc(url, "server/discover")
    assert discovered["result"]["capabilities"]["extensions"]["com.example/catalog"] == {"suggest": True}


@pytest.fixture
def lowlevel() -> Server[Any]:
    server: Server[Any] = Server("custom-methods")

    def search(ctx: Any, params: SearchParams) -> SearchResult:
        return SearchResult(items=[f"{params.query}-{i}" for i in range(params.limit)])

    server.add_request_handler("com.example/search", SearchParams, search)
    return server


@MODES
def test_a_low_level_server_serves_a_custom_request_type(connect: Any, lowlevel: Server[Any], mode: str,
                                                        version: str) -> None:
    with connect(lowlevel, mode=mode) as client:
        found = client.session.send_request(SearchRequest(params=SearchParams(query="q", limit=2)), SearchResult)
        assert found.items == ["q-0", "q-1"]
        with pytest.raises(MCPError) as invalid:
            client.session.send_request(LooseSearch(params={"limit": "many"}), SearchResult)
        assert (invalid.value.code, invalid.value.message) == (types.INVALID_PARAMS, "Invalid request parameters")


def test_request_and_notification_generics_dump_as_the_wire_has_them() -> None:
    class Poke(types.Notification[dict[str, Any], Literal["com.example/poke"]]):
        method: Literal["com.example/poke"] = "com.example/poke"
        params: dict[str, Any]

    assert types.dump(SearchRequest(params=SearchParams(query="q"))) == \
        {"method": "com.example/search", "params": {"query": "q", "limit": 3}}
    assert types.dump(Poke(params={"n": 1})) == {"method": "com.example/poke", "params": {"n": 1}}
    assert isinstance(SearchRequest(params=SearchParams(query="q")), types.Request)


def test_a_custom_method_over_raw_http_in_both_eras(lowlevel: Server[Any], serve_http: Any) -> None:
    url = serve_http(lowlevel)
    session = legacy_handshake(url)
    legacy = rpc(url, "com.example/search", {"query": "x", "limit": 1}, session_id=session.session_id,
                 protocol_version=session.protocol_version)
    assert legacy["result"] == {"items": ["x-0"]}
    modern = modern_rpc(url, "com.example/search", {"query": "x", "limit": 1})
    assert modern["result"]["items"] == ["x-0"] and modern["result"]["resultType"] == "complete"


# --- mistakes refused where they are made ----------------------------------------------------------
def test_an_extension_cannot_bind_a_spec_method_or_an_empty_version_set() -> None:
    with pytest.raises(ValueError, match="cannot bind spec method 'tools/list'"):
        MethodBinding("tools/list", types.RequestParams, lambda ctx, params: {})
    with pytest.raises(ValueError, match="empty protocol_versions"):
        MethodBinding("com.example/x", types.RequestParams, lambda ctx, params: {}, protocol_versions=frozenset())


def test_identifiers_need_a_vendor_prefix() -> None:
    with pytest.raises(TypeError, match="vendor-prefix/name"):
        type("Bare", (Extension,), {"identifier": "search"})
    with pytest.raises(TypeError, match="vendor-prefix/name"):
        MCPServer("x", extensions=[type("Unnamed", (Extension,), {})()])
    with pytest.raises(TypeError, match="vendor-prefix/name"):
        advertise("search")
    with pytest.raises(TypeError, match="sequence of ClientExtension"):
        Client(MCPServer("x"), extensions={"com.example/a": {}})  # type: ignore[arg-type]


def test_clashes_are_refused_when_the_server_is_built() -> None:
    class One(Extension):
        identifier = "com.example/one"

        def methods(self) -> list[MethodBinding]:
            return [MethodBinding("com.example/shared", types.RequestParams, lambda ctx, params: {})]

    class Other(One):
        identifier = "com.example/other"

    with pytest.raises(ValueError, match="'com.example/one' is already registered"):
        MCPServer("x", extensions=[One(), One()])
    with pytest.raises(ValueError, match="binds method 'com.example/shared', which is already served"):
        MCPServer("x", extensions=[One(), Other()])
    twice = [advertise("com.example/a"), advertise("com.example/a")]
    with pytest.raises(ValueError, match="passed more than once"):
        Client(MCPServer("x"), extensions=twice)


def test_an_async_interceptor_is_refused_with_the_porting_hint() -> None:
    class Leftover(Extension):
        identifier = "com.example/leftover"

        async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:  # type: ignore[override]
            return call_next(ctx)

    with pytest.raises(TypeError, match="delete async/await"):
        MCPServer("x", extensions=[Leftover()])


def test_apps_refuses_what_a_host_could_not_render() -> None:
    apps = Apps()
    with pytest.raises(ValueError, match="ui:// scheme"):
        apps.tool(resource_uri="https://example.com/app.html")
    with pytest.raises(ValueError, match=r"_meta\['ui'\]"):
        apps.tool(resource_uri="ui://a", meta={"ui": {}})
    with pytest.raises(ValueError, match="served as 'text/html;profile=mcp-app'"):
        apps.add_resource(TextResource("ui://a", "<p/>", mime_type="text/html"))
    apps.add_resource(TextResource("ui://b", "<p/>"))
    assert [binding.resource.mime_type for binding in apps.resources()] == [APP_MIME_TYPE]
    apps.tool(resource_uri="ui://missing")(lambda: "x")
    with pytest.raises(ValueError, match="no such resource is registered"):
        MCPServer("x", extensions=[apps])


def test_a_client_extension_declares_its_settings(lowlevel: Server[Any]) -> None:
    class Catalog(ClientExtension):
        identifier = "com.example/catalog"

        def settings(self) -> dict[str, Any]:
            return {"depth": 2}

    seen: list[Any] = []

    def who(ctx: Any, params: Any) -> dict[str, Any]:
        seen.append(ctx.session.client_capabilities.extensions)
        return {}

    lowlevel.add_request_handler("com.example/who", types.RequestParams, who)
    for mode in ("legacy", "auto"):
        with Client(lowlevel, mode=mode, extensions=[Catalog(), ToolsAware()]) as client:
            client.session.send_request("com.example/who", {}, types.Result)
    expected = {"io.modelcontextprotocol/tasks": {}, "com.example/catalog": {"depth": 2}, "com.example/tools": {}}
    assert seen == [expected, expected]


class ToolsAware(ClientExtension):
    identifier = "com.example/tools"


def test_tool_binding_defaults() -> None:
    binding = ToolBinding(fn=len)
    assert (binding.meta, binding.kwargs) == (None, {})


def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The extensions page (docs/topics/extensions.md) shows a program that runs as printed."""
    run_docs_program("topics/catalog.py")
    assert capsys.readouterr().out == "['mcp-1', 'mcp-2']\n"


# --- vendor notifications, observed by a client extension ------------------------------------------
class Progress(types.NotificationParams):
    n: int


@MODES
def test_a_binding_observes_vendor_notifications_in_order(connect: Any, mode: str, version: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    server: Server[Any] = Server("notifying")

    def search(ctx: Any, params: types.RequestParams) -> dict[str, Any]:
        for n in range(3):
            ctx.session.send_notification("acme/searchProgress", ctx.request_id, {"n": n})
        ctx.session.send_notification("acme/unbound", ctx.request_id, {"x": 1})
        ctx.session.send_notification("acme/searchProgress", ctx.request_id, {"n": "not a number"})
        return {"items": ["a"]}

    server.add_request_handler("acme/search", types.RequestParams, search)
    server.add_request_handler("acme/echo", types.RequestParams, lambda ctx, params: {"echoed": True})
    seen: list[int] = []
    echoed: list[Any] = []
    done = threading.Event()

    def on_progress(params: Progress) -> None:
        seen.append(params.n)
        if params.n == 0:  # the handler runs on the observer's own thread, so the session is usable here
            echoed.append(client.session.send_request("acme/echo", {}, types.Result).model_extra)
        if len(seen) == 3:
            done.set()

    class Acme(ClientExtension):
        identifier = "com.acme/search"

        def notifications(self) -> list[NotificationBinding[Any]]:
            return [NotificationBinding(method="acme/searchProgress", params_type=Progress, handler=on_progress)]

    delivered: list[Any] = []
    complete = {} if mode == "legacy" else {"resultType": "complete"}  # the bare Result declares none
    with connect(server, mode=mode, extensions=[Acme()], message_handler=delivered.append) as client:
        assert client.session.send_request("acme/search", {}, types.Result).model_extra == {"items": ["a"], **complete}
        assert done.wait(30), seen
    assert seen == [0, 1, 2] and echoed == [{"echoed": True, **complete}]
    assert "Failed to validate notification: acme/searchProgress" in caplog.text
    assert not [m for m in delivered if getattr(m, "method", "").startswith("acme/")]


def test_a_notification_method_has_one_observer() -> None:
    def binding() -> NotificationBinding[Any]:
        return NotificationBinding(method="acme/x", params_type=Progress, handler=lambda params: None)

    class One(ClientExtension):
        identifier = "com.acme/one"

        def notifications(self) -> list[NotificationBinding[Any]]:
            return [binding()]

    class Other(One):
        identifier = "com.acme/other"

    with pytest.raises(ValueError, match="'com.acme/one' and 'com.acme/other' both bind notification method 'acme/x'"):
        Client(MCPServer("x"), extensions=[One(), Other()])
