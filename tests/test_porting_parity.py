"""What an official SDK program ported by the rule sees on the MCPServer tier (issue 14).

Each test is one behaviour measured on ``mcp`` 2.3.0 and written down here; each runs over a real
loopback HTTP server and in memory, in both eras where the era matters. Numbers follow the issue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Any, Callable, TypedDict

import pytest
from pydantic import BaseModel

from minimcp import Client, MCPError, types
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)

ERAS = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])


class Place(TypedDict):
    """Where something is."""

    lat: float
    name: str


class Reading:
    celsius: float
    station: str | None = None

    def __init__(self, celsius: float) -> None:
        self.celsius = celsius


class Weather(BaseModel):
    summary: str


def _shapes() -> MCPServer:
    mcp = MCPServer("shapes")

    @mcp.tool()
    def place() -> Place:
        return {"lat": 1.5, "name": "here"}

    @mcp.tool()
    def reading() -> Reading:
        return Reading(21.5)

    @mcp.tool()
    def weather() -> Annotated[types.CallToolResult, Weather]:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="sunny")], structured_content={"summary": "sunny"}
        )

    @mcp.tool()
    def maybe_ask(ctx: Context) -> str | types.InputRequiredResult:
        return "answered"

    return mcp


@ERAS
def test_1_typed_dicts_and_annotated_classes_get_schemas_and_structured_content(
    connect: Callable[..., Client], mode: str
) -> None:
    with connect(_shapes(), mode=mode) as client:
        schemas = {tool.name: tool.output_schema for tool in client.list_tools().tools}
        assert schemas["place"]["title"] == "Place" and set(schemas["place"]["required"]) == {"lat", "name"}
        assert schemas["place"]["description"] == "Where something is."
        assert "description" not in schemas["reading"]
        assert schemas["reading"]["properties"]["celsius"] == {"title": "Celsius", "type": "number"}
        assert schemas["reading"]["required"] == ["celsius"]  # a class attribute with a value is a default
        assert client.call_tool("place").structured_content == {"lat": 1.5, "name": "here"}
        assert client.call_tool("reading").structured_content == {"celsius": 21.5, "station": None}


def test_2_annotated_call_tool_result_advertises_the_model(connect: Callable[..., Client]) -> None:
    with connect(_shapes()) as client:
        schemas = {tool.name: tool.output_schema for tool in client.list_tools().tools}
        assert schemas["weather"] == Weather.model_json_schema()
        assert client.call_tool("weather").structured_content == {"summary": "sunny"}


def _failing() -> MCPServer:
    mcp = MCPServer("failing")

    @mcp.tool()
    def crash() -> str:
        raise RuntimeError("secret path /etc/x")

    @mcp.tool()
    def refuse() -> str:
        raise ToolError("the ledger is closed")

    @mcp.tool()
    def count(n: int) -> int:
        return n

    @mcp.tool()
    def miscount() -> int:
        return "secret total"  # type: ignore[return-value]

    @mcp.tool()
    def quote(uri: str, ctx: Context) -> str:
        return "".join(str(part.content) for part in ctx.read_resource(uri))

    @mcp.resource("notes://crash")
    def crashing_note() -> str:
        raise RuntimeError("secret dsn postgres://u:p@db")

    @mcp.resource("notes://refused")
    def refused_note() -> str:
        raise ResourceError("notes are archived")

    @mcp.resource("notes://{key}/crash")
    def crashing_template(key: str) -> str:
        raise RuntimeError(f"secret key {key}")

    return mcp


@ERAS
def test_3_a_crashing_tool_keeps_its_text_in_the_log(
    connect: Callable[..., Client], mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="minimcp.server"), connect(_failing(), mode=mode) as client:
        crashed = client.call_tool("crash")
        assert crashed.is_error and crashed.content[0].text == "Error executing tool crash"
        refused = client.call_tool("refuse")
        assert refused.content[0].text == "Error executing tool refuse: the ledger is closed"
        invalid = client.call_tool("count", {"n": "many"})
        assert invalid.is_error and invalid.content[0].text.startswith("Error executing tool count: 1 validation error")
        unfit = client.call_tool("miscount")  # a value that fails the output schema is a crash too
        assert unfit.is_error and unfit.content[0].text == "Error executing tool miscount"
        unknown = client.call_tool("nope")
        assert unknown.is_error and unknown.content[0].text == "Unknown tool: nope"
        nested = client.call_tool("quote", {"uri": "notes://crash"})
        assert nested.content[0].text == "Error executing tool quote: Error reading resource notes://crash"
        refused_note = client.call_tool("quote", {"uri": "notes://refused"})
        assert refused_note.content[0].text == "Error executing tool quote: notes are archived"
    assert "secret path /etc/x" in caplog.text and "Traceback" in caplog.text  # the server log keeps it all
    assert "secret total" in caplog.text


def test_3_call_tool_in_process_raises_the_official_errors() -> None:
    mcp = _failing()
    with pytest.raises(UnexpectedToolError, match="^Error executing tool crash$") as crashed:
        mcp.call_tool("crash", {})
    assert isinstance(crashed.value.__cause__, RuntimeError)
    with pytest.raises(ToolError, match="^Error executing tool refuse: the ledger is closed$") as refused:
        mcp.call_tool("refuse", {})
    assert not isinstance(refused.value, UnexpectedToolError)
    with pytest.raises(ToolError, match="Unknown tool: nope"):
        mcp.call_tool("nope", {})
    with pytest.raises(UnexpectedResourceError, match="^Error reading resource notes://crash$"):
        mcp.read_resource("notes://crash")
    with pytest.raises(ResourceNotFoundError, match="^Unknown resource: notes://absent$"):
        mcp.read_resource("notes://absent")


@ERAS
def test_7_and_16_resource_failures_answer_as_officially(
    connect: Callable[..., Client], mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="minimcp.server"), connect(_failing(), mode=mode) as client:
        with pytest.raises(MCPError) as crashed:
            client.read_resource("notes://crash")
        assert (crashed.value.code, str(crashed.value), crashed.value.data) == \
            (-32603, "Error reading resource notes://crash", {"uri": "notes://crash"})
        with pytest.raises(MCPError) as template:
            client.read_resource("notes://k/crash")
        assert (template.value.code, str(template.value)) == \
            (-32603, "Error creating resource from template notes://k/crash")
        with pytest.raises(MCPError) as refused:
            client.read_resource("notes://refused")
        assert (refused.value.code, str(refused.value)) == (-32603, "notes are archived")
        with pytest.raises(MCPError) as missing:
            client.read_resource("notes://absent")
        assert (missing.value.code, str(missing.value), missing.value.data) == \
            (-32602, "Unknown resource: notes://absent", {"uri": "notes://absent"})
    assert "postgres://u:p@db" in caplog.text and "secret key k" in caplog.text


def test_4_descriptions_are_the_raw_docstring_or_empty(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("docs")

    @mcp.tool()
    def indented() -> str:
        """First line.

        Indented more.
        """
        return ""

    @mcp.resource("memo://plain")
    def plain() -> str:
        return ""

    @mcp.resource("memo://{key}")
    def keyed(key: str) -> str:
        return key

    with connect(mcp) as client:
        (tool,) = client.list_tools().tools
        assert tool.description == indented.__doc__
        assert [r.description for r in client.list_resources().resources] == [""]
        assert [t.description for t in client.list_resource_templates().resource_templates] == [""]


@dataclass
class AppState:
    greeting: str


def test_5_context_takes_two_type_parameters(connect: Callable[..., Client]) -> None:
    from contextlib import contextmanager

    @contextmanager
    def lifespan(server: MCPServer[AppState]) -> Any:
        yield AppState("hello")

    mcp = MCPServer("typed", lifespan=lifespan)

    @mcp.tool()
    def greet(ctx: Context[AppState, Any]) -> str:
        return ctx.request_context.lifespan_context.greeting

    with connect(mcp) as client:
        assert client.call_tool("greet").content[0].text == "hello"


def test_11_official_import_paths() -> None:
    import minimcp.types.jsonrpc
    import minimcp.types.version
    from minimcp.server.mcpserver import Icon
    from minimcp.server.mcpserver.utilities.types import Image

    assert Icon is types.Icon and Image.__name__ == "Image"
    assert minimcp.types.version.LATEST_MODERN_VERSION == "2026-07-28"
    assert minimcp.types.version.is_version_at_least("2025-11-25", "2025-06-18")
    assert types.ElicitRequestedSchema == dict[str, Any]
    request = types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert isinstance(request, minimcp.types.jsonrpc.JSONRPCRequest)



def test_12_str_or_input_required_advertises_the_str_schema(connect: Callable[..., Client]) -> None:
    with connect(_shapes()) as client:
        schemas = {tool.name: tool.output_schema for tool in client.list_tools().tools}
        assert schemas["maybe_ask"]["properties"] == {"result": {"title": "Result", "type": "string"}}
        assert client.call_tool("maybe_ask").structured_content == {"result": "answered"}


@ERAS
def test_6_session_send_notification_takes_a_model(connect: Callable[..., Client], mode: str) -> None:
    mcp = MCPServer("notes")

    @mcp.tool()
    def announce(ctx: Context) -> str:
        note = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="info", data="announced")
        )
        ctx.session.send_notification(note, related_request_id=ctx.request_id)
        return "done"

    seen: list[Any] = []
    with connect(mcp, mode=mode, message_handler=seen.append) as client:
        assert client.call_tool("announce").content[0].text == "done"
    assert [(m.method, m.params.data) for m in seen] == [("notifications/message", "announced")]


def test_12_input_responses_are_typed(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("refunds")
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message="Refund $3?", requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
    )

    @mcp.tool()
    def refund(ctx: Context) -> str | types.InputRequiredResult:
        answer = (ctx.input_responses or {}).get("confirm")
        if isinstance(answer, types.ElicitResult):
            return "refunded $3" if answer.action == "accept" else "refund cancelled"
        return types.InputRequiredResult(input_requests={"confirm": question}, request_state="asked")

    def accept(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"ok": True})

    with connect(mcp, mode="2026-07-28", elicitation_callback=accept) as client:
        assert client.call_tool("refund").content[0].text == "refunded $3"


def test_13_ctx_read_resource(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("reader")

    @mcp.resource("notes://today")
    def today() -> str:
        return "buy milk"

    @mcp.tool()
    def read_note(uri: str, ctx: Context) -> str:
        return "".join(str(part.content) for part in ctx.read_resource(uri))

    with connect(mcp) as client:
        assert client.call_tool("read_note", {"uri": "notes://today"}).content[0].text == "buy milk"
        missing = client.call_tool("read_note", {"uri": "notes://never"})
        assert missing.is_error
        assert missing.content[0].text == "Error executing tool read_note: Unknown resource: notes://never"


def test_15_stateless_legacy_elicit_names_the_missing_back_channel(serve_http: Callable[..., str]) -> None:
    mcp = MCPServer("stateless")

    class Confirm(BaseModel):
        ok: bool

    @mcp.tool()
    def ask(ctx: Context) -> str:
        return str(ctx.elicit("Sure?", Confirm))

    url = serve_http(mcp, stateless_http=True)
    with Client(url, mode="legacy", elicitation_callback=lambda c, p: types.ElicitResult(action="decline")) as client:
        with pytest.raises(MCPError) as refused:
            client.call_tool("ask")
    assert str(refused.value) == (
        "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."
    )


def test_10_a_question_that_changes_every_round_fails_at_once(connect: Callable[..., Client]) -> None:
    import uuid

    mcp = MCPServer("payments")

    @mcp.tool()
    def pay(amount: float, ctx: Context) -> str:
        token = str(uuid.uuid4())
        result = ctx.elicit_url("Confirm the payment", f"https://pay.example/confirm?id={token}", token)
        return result.action

    asked: list[str] = []

    def accept(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.url)
        return types.ElicitResult(action="accept")

    with connect(mcp, mode="2026-07-28", elicitation_callback=accept) as client:
        with pytest.raises(MCPError) as changed:
            client.call_tool("pay", {"amount": 3})
    assert "'elicit:0' changed between rounds" in str(changed.value)
    assert "questions must be built from the arguments and earlier answers" in str(changed.value)
    assert len(asked) == 1


def test_14_rfc_6570_templates_beyond_level_1(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("shelves")

    @mcp.resource("shelves://browse{/path*}")
    def browse(path: list[str]) -> str:
        return "/".join(path) or "(root)"

    @mcp.resource("search://books{?q,limit}")
    def search(q: str = "", limit: int = 10) -> str:
        return f"{q}:{limit}"

    @mcp.resource("docs://{name}{.ext}")
    def doc(name: str, ext: str) -> str:
        return f"{name} as {ext}"

    with connect(mcp) as client:
        def read(uri: str) -> str:
            return client.read_resource(uri).contents[0].text

        assert read("shelves://browse/fiction/sci%20fi") == "fiction/sci fi"
        assert read("shelves://browse") == "(root)"
        assert read("search://books?limit=3&q=dune") == "dune:3"
        assert read("search://books") == ":10"
        assert read("docs://a.tar.md") == "a.tar as md"
        with pytest.raises(MCPError) as unknown:
            read("docs://readme")  # {.ext} is not optional: only query variables are
        assert unknown.value.code == -32602
    with pytest.raises(ValueError, match="prefix modifier"):
        MCPServer("bad").resource("x://{name:3}")(lambda name: name)
    with pytest.raises(ValueError, match="adjacent"):
        MCPServer("bad").resource("x://{a}{b}")(lambda a, b: a)


def test_14_uri_template_matches_and_expands_as_the_official_one() -> None:
    from minimcp.shared.uri_template import InvalidUriTemplate, UriTemplate

    shelves = UriTemplate.parse("shelves://browse{/path*}{?sort}")
    assert shelves.expand({"path": ["a b", "c"], "sort": "up"}) == "shelves://browse/a%20b/c?sort=up"
    assert shelves.match("shelves://browse/a%20b/c?sort=up&x=1") == {"path": ["a b", "c"], "sort": "up"}
    assert shelves.match("shelves://browse/") == {"path": [""]}
    assert UriTemplate.parse("files://{+path}").match("files://a/../b") == {"path": "a/../b"}
    assert UriTemplate.parse("x://{a}/{b}").match("x://1/") == {"a": "1", "b": ""}
    assert UriTemplate.parse("m://{;p,q}").match("m://;p=1") is None  # every path expression is required
    assert UriTemplate.parse("s://b{?q}").match("s://b?%71=x&q=a+b") == {"q": "a+b"}  # names stay encoded
    for refused in ("x://{?q*}", "x://{+a}/{+b}", "x://{/a}{/b*}", "x://{a"):
        with pytest.raises(InvalidUriTemplate):
            UriTemplate.parse(refused)


def test_14_template_arguments_that_escape_a_path_are_unknown_resources(connect: Callable[..., Client]) -> None:
    from minimcp.server.mcpserver import ResourceSecurity
    from minimcp.shared.path_security import PathEscapeError, safe_join

    def files(**options: Any) -> MCPServer:
        mcp = MCPServer("files", **options)

        @mcp.resource("files://{+path}")
        def read(path: str) -> str:
            return f"would open {path}"

        @mcp.resource("git://diff/{+range}", security=ResourceSecurity(exempt_params={"range"}))
        def diff(range: str) -> str:
            return f"diff {range}"

        return mcp

    with connect(files()) as client:
        assert client.read_resource("files://notes/today.txt").contents[0].text == "would open notes/today.txt"
        assert client.read_resource("git://diff/../main").contents[0].text == "diff ../main"
        for escaping in ("files://notes/../../etc/passwd", "files:///etc/passwd", "files://C:%5CWindows"):
            with pytest.raises(MCPError) as refused:
                client.read_resource(escaping)
            assert refused.value.code == -32602 and str(refused.value) == f"Unknown resource: {escaping}"
    with connect(files(resource_security=ResourceSecurity(exempt_params={"path"}))) as client:
        assert client.read_resource("files://a/../..").contents[0].text == "would open a/../.."
    with pytest.raises(PathEscapeError, match="escapes base"):
        safe_join("/srv/data", "../etc/passwd")
    assert safe_join("/srv/data", "notes", "a.txt").as_posix().endswith("/srv/data/notes/a.txt")


def test_9_capabilities_per_era_as_the_official_mcpserver(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("caps")
    with connect(mcp, mode="legacy") as client:
        legacy = types.dump(client.server_capabilities)
        client.set_logging_level("info")  # still answered, as minimcp always has, though not advertised
    with connect(mcp, mode="auto") as client:
        modern = types.dump(client.server_capabilities)
    assert legacy == {"prompts": {"listChanged": False}, "resources": {"subscribe": False, "listChanged": False},
                      "tools": {"listChanged": False}}
    assert modern == {"prompts": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                      "tools": {"listChanged": True}}


def test_9_cache_hints_default_private_and_stale_and_are_configurable(connect: Callable[..., Client]) -> None:
    from minimcp.server.caching import CacheHint

    assert types.CallToolResult().result_type == "complete"
    plain, hinted = MCPServer("plain"), MCPServer("hinted", cache_hints={"tools/list": CacheHint(60_000, "public")})
    with connect(plain, mode="2026-07-28") as client:
        listed = client.list_tools()
        assert (listed.ttl_ms, listed.cache_scope, listed.result_type) == (0, "private", "complete")
    with connect(hinted, mode="2026-07-28") as client:
        listed = client.list_tools()
        assert (listed.ttl_ms, listed.cache_scope) == (60_000, "public")
        assert client.list_prompts().ttl_ms == 0  # a hint is per method
    with pytest.raises(ValueError, match="cacheable methods"):
        MCPServer("wrong", cache_hints={"tools/call": CacheHint()})


def test_9_the_low_level_server_adds_no_hints_of_its_own(serve_http: Callable[..., str]) -> None:
    from conftest import legacy_handshake, modern_rpc

    from minimcp.server.caching import CacheHint
    from minimcp.server.lowlevel import Server

    def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[], ttl_ms=5, cache_scope="public")  # the handler's own hints

    plain = serve_http(Server("plain", on_list_tools=list_tools, on_list_prompts=list_prompts))
    hinted = serve_http(Server("hinted", on_list_tools=list_tools, cache_hints={"tools/list": CacheHint(1_000, "public")}))
    tools = modern_rpc(plain, "tools/list")["result"]
    assert (tools["resultType"], tools["ttlMs"], tools["cacheScope"]) == ("complete", 0, "private")
    prompts = modern_rpc(plain, "prompts/list")["result"]
    assert (prompts["ttlMs"], prompts["cacheScope"]) == (5, "public")
    assert (modern_rpc(hinted, "tools/list")["result"]["ttlMs"], modern_rpc(hinted, "tools/list")["result"]["cacheScope"]) \
        == (1_000, "public")
    assert legacy_handshake(hinted).rpc("tools/list")["result"] == {"tools": []}  # nothing of 2026-07-28 on legacy


@ERAS
def test_5_a_ported_lifespan_keeps_its_decorator_and_the_request_knows_its_version(
    connect: Callable[..., Client], mode: str
) -> None:
    from contextlib import asynccontextmanager

    @asynccontextmanager  # left in place by the porting rule, on a function that is now synchronous
    def lifespan(server: MCPServer[AppState]) -> Any:
        yield AppState("from the lifespan")

    mcp = MCPServer("ported", lifespan=lifespan)  # type: ignore[arg-type]

    @mcp.tool()
    def where(ctx: Context[AppState, Any]) -> str:
        return f"{ctx.request_context.lifespan_context.greeting} at {ctx.request_context.protocol_version}"

    with connect(mcp, mode=mode) as client:
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.call_tool("where").content[0].text == f"from the lifespan at {expected}"


def test_11_the_official_top_level_names_we_have_are_importable_from_minimcp() -> None:
    """``from mcp import X`` ported to ``from minimcp import X`` works for each of the official
    top-level names minimcp implements; the rest are listed, so that a new one is a decision."""
    import mcp

    import minimcp

    not_ported = {"ClientNotification", "ClientRequest", "ClientResult", "ClientSessionGroup", "Notification",
                  "SamplingRole", "ServerRequest", "ServerResult"}
    missing = {name for name in mcp.__all__ if not hasattr(minimcp, name)}
    assert missing <= not_ported, sorted(missing - not_ported)
    from minimcp.server.lowlevel.sessions import ServerSession
    from minimcp.server.session import ServerSession as at_the_official_path
    from minimcp.server.stdio import stdio_server

    assert minimcp.ServerSession is ServerSession is at_the_official_path
    assert minimcp.stdio_server is stdio_server
    assert minimcp.JSONRPCRequest is types.JSONRPCRequest


def _back_channel_errors() -> MCPServer:
    from minimcp.shared.exceptions import UrlElicitationRequiredError

    mcp = MCPServer("errors")

    @mcp.tool()
    def connect_service() -> str:
        raise UrlElicitationRequiredError([types.ElicitRequestURLParams(
            mode="url", message="Authorize", url="https://auth.example/x", elicitation_id="auth-1")])

    @mcp.tool()
    def poem(ctx: Context) -> str:
        answer = ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text="a poem"))], max_tokens=10)
        return str(answer.content)

    return mcp


def test_in_process_2026_calls_raise_the_servers_own_exception() -> None:
    """The official in-memory client calls 2026-07-28 handlers directly, so its caller catches the
    server's exception classes; its legacy path and every real transport give a plain ``MCPError``."""
    from minimcp.shared.exceptions import NoBackChannelError, UrlElicitationRequiredError

    with Client(_back_channel_errors(), mode="2026-07-28") as client:
        with pytest.raises(UrlElicitationRequiredError) as required:
            client.call_tool("connect_service")
        assert [e.elicitation_id for e in required.value.elicitations] == ["auth-1"]
        with pytest.raises(NoBackChannelError) as refused:
            client.call_tool("poem")
        assert refused.value.method == "sampling/createMessage"


@pytest.mark.parametrize(("where", "mode"), [("memory", "legacy"), ("http", "legacy"), ("http", "2026-07-28")])
def test_errors_that_crossed_the_wire_are_plain_mcp_errors(where: str, mode: str,
                                                            serve_http: Callable[..., str]) -> None:
    from minimcp.shared.exceptions import UrlElicitationRequiredError

    mcp = _back_channel_errors()
    with Client(mcp if where == "memory" else serve_http(mcp), mode=mode) as client:
        with pytest.raises(MCPError) as required:
            client.call_tool("connect_service")
    assert type(required.value) is MCPError
    assert (required.value.code, str(required.value)) == (-32042, "URL elicitation required")
    assert required.value.data["elicitations"][0]["elicitationId"] == "auth-1"
    # The official ways back to the typed error:
    rebuilt = UrlElicitationRequiredError.from_error(required.value.error)
    assert [(e.elicitation_id, e.url) for e in rebuilt.elicitations] == [("auth-1", "https://auth.example/x")]
    assert str(rebuilt) == "URL elicitation required"
    envelope = types.JSONRPCError(jsonrpc="2.0", id=1, error=required.value.error)
    assert MCPError.from_jsonrpc_error(envelope).error == required.value.error
    with pytest.raises(ValueError, match="Expected error code -32042, got -32600"):
        UrlElicitationRequiredError.from_error(types.ErrorData(code=-32600, message="no"))


def test_11_the_oauth_models_declare_every_official_field() -> None:
    """Measured on the installed ``mcp`` 2.3.0: each ``mcp.shared.auth`` model's fields are declared
    here too, so an absent one reads as ``None`` rather than raising (the models keep extras)."""
    import mcp.shared.auth as official
    from pydantic import BaseModel

    import minimcp.shared.auth as ours

    models = [name for name, value in vars(official).items()
              if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == official.__name__]
    assert "OAuthMetadata" in models and "ProtectedResourceMetadata" in models
    for name in models:
        missing = set(getattr(official, name).model_fields) - set(getattr(ours, name).model_fields)
        assert not missing, f"{name} lacks {sorted(missing)}"
    metadata = ours.OAuthMetadata(issuer="https://auth.example.com", token_endpoint="https://auth.example.com/token")
    assert (metadata.op_policy_uri, metadata.op_tos_uri, metadata.ui_locales_supported) == (None, None, None)
