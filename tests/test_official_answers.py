"""Small answers given as the official SDK gives them, each measured against mcp 2.3.0 in the same
test where it can run in this process: progress on a 2026-07-28 in-process connection, a
resolver's ``Elicit`` schema on 2026-07-28, a dict or TypedDict output schema, which era hears a
list change told which way, the models of a tool registered under another name, and the key
order of a listed tool's schemas in each era."""

from __future__ import annotations

import json
from typing import Annotated, Any, Callable, TypedDict

import anyio
import pytest
from conftest import MODES, heard_methods
from mcp import Client as OfficialClient
from mcp.server.mcpserver import Context as OfficialContext
from mcp.server.mcpserver import MCPServer as OfficialServer
from pydantic import BaseModel

from minimcp import Client
from minimcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from minimcp.types import ElicitResult

WAIT = 10


def _progress_server() -> MCPServer:
    mcp = MCPServer("progress")

    @mcp.tool()
    def work(ctx: Context) -> str:
        ctx.report_progress(1, 3, "one")
        ctx.report_progress(2.5, 3)
        return "done"

    return mcp


def _record(mode: str, target: Any) -> tuple[list[tuple[Any, Any, Any]], list[str]]:
    progress: list[tuple[Any, Any, Any]] = []
    handled: list[str] = []
    with Client(target, mode=mode, message_handler=lambda m: handled.append(type(m).__name__)) as client:
        client.call_tool("work", {}, progress_callback=lambda p, t, m: progress.append((p, t, m)))
    return progress, handled


def test_in_process_2026_progress_reaches_only_its_callback_with_its_types() -> None:
    progress, handled = _record("auto", _progress_server())
    assert progress == [(1, 3, "one"), (2.5, 3, None)]
    assert [type(p) for p, _, _ in progress] == [int, float]  # 1 stays 1, as the official in-process path keeps it
    assert handled == []


@pytest.mark.parametrize("transport", ["memory-legacy", "http-legacy", "http-auto"])
def test_elsewhere_progress_is_a_notification_the_message_handler_sees(
        serve_http: Callable[..., str], transport: str) -> None:
    where, mode = transport.split("-")
    mcp = _progress_server()
    progress, handled = _record(mode, mcp if where == "memory" else serve_http(mcp))
    assert progress == [(1.0, 3.0, "one"), (2.5, 3.0, None)]
    assert [type(p) for p, _, _ in progress] == [float, float]
    assert handled == ["ProgressNotification", "ProgressNotification"]


def test_the_official_sdk_answers_progress_the_same_way() -> None:
    theirs = OfficialServer("progress")

    @theirs.tool()
    async def work(ctx: OfficialContext) -> str:
        await ctx.report_progress(1, 3, "one")
        await ctx.report_progress(2.5, 3)
        return "done"

    async def run(mode: str) -> tuple[list[Any], list[str]]:
        progress: list[Any] = []
        handled: list[str] = []

        async def on_progress(p: Any, t: Any, m: Any) -> None:
            progress.append((p, t, m))

        async def on_message(message: Any) -> None:
            handled.append(type(message).__name__)

        async with OfficialClient(theirs, mode=mode, message_handler=on_message) as client:
            await client.call_tool("work", {}, progress_callback=on_progress)
        return progress, handled

    for mode in ("auto", "legacy"):
        official = anyio.run(run, mode)
        ours = _record(mode, _progress_server())
        assert official == ours and [repr(p) for p, _, _ in official[0]] == [repr(p) for p, _, _ in ours[0]]


class Confirm(BaseModel):
    """Confirm the booking."""

    ok: bool


def _ask(ctx: Context) -> Any:
    return Elicit("Sure?", Confirm)


@MODES
def test_a_resolvers_elicit_schema_as_the_official_sdk_sends_it(serve_http: Callable[..., str], mode: str,
                                                                 version: str) -> None:
    mcp = MCPServer("elicit")

    @mcp.tool()
    def book(answer: Annotated[Confirm, Resolve(_ask)]) -> str:
        return str(answer.ok)

    @mcp.tool()
    def confirm(ctx: Context) -> str:
        return ctx.elicit("Sure?", schema=Confirm).action

    asked: list[dict[str, Any]] = []

    def yes(context: Any, params: Any) -> ElicitResult:
        asked.append(params.requested_schema)
        return ElicitResult(action="accept", content={"ok": True})

    with Client(serve_http(mcp), mode=mode, elicitation_callback=yes) as client:
        assert client.call_tool("book", {}).content[0].text == "True"
        assert client.call_tool("confirm", {}).content[0].text == "accept"
    full = {"description": "Confirm the booking.", "properties": {"ok": {"title": "Ok", "type": "boolean"}},
            "required": ["ok"], "title": "Confirm", "type": "object"}
    resolver = {k: v for k, v in full.items() if k not in ("title", "description")} if mode == "auto" else full
    assert asked == [resolver, full]  # ctx.elicit keeps the model's title in both eras


class WeatherMetrics(TypedDict):
    temperature: float
    humidity: float


def get_weather_metrics(city: str) -> dict[str, float]:
    return {"temperature": 21.5, "humidity": 0.4}


def get_weather(city: str) -> WeatherMetrics:
    return {"temperature": 21.5, "humidity": 0.4}


def test_dict_and_typeddict_output_schemas_are_the_official_ones() -> None:
    theirs, ours = OfficialServer("w"), MCPServer("w")
    for fn in (get_weather_metrics, get_weather):
        theirs.tool()(fn)
        ours.tool()(fn)
    official = {tool.name: json.dumps(tool.output_schema) for tool in anyio.run(theirs.list_tools)}
    mine = {tool.name: json.dumps(tool.output_schema) for tool in ours.list_tools()}
    assert mine == official  # key order too: a program that prints the schema prints the same line
    assert json.loads(mine["get_weather_metrics"])["title"] == "get_weather_metricsDictOutput"
    assert json.loads(mine["get_weather"])["title"] == "WeatherMetrics"


STORY = ("both", "publish_only", "session_only", "end")
END = "notifications/resources/list_changed"


def _official_story() -> OfficialServer:
    theirs = OfficialServer("changes")

    @theirs.tool()
    async def both(ctx: OfficialContext) -> str:
        await ctx.notify_prompts_changed()
        await ctx.session.send_prompt_list_changed()
        return "ok"

    @theirs.tool()
    async def publish_only(ctx: OfficialContext) -> str:
        await ctx.notify_tools_changed()
        return "ok"

    @theirs.tool()
    async def session_only(ctx: OfficialContext) -> str:
        await ctx.session.send_tool_list_changed()
        return "ok"

    @theirs.tool()
    async def end(ctx: OfficialContext) -> str:  # what is heard ends here, in either era
        await ctx.notify_resources_changed()
        await ctx.session.send_resource_list_changed()
        return "ok"

    return theirs


def _our_story() -> MCPServer:
    ours = MCPServer("changes")

    @ours.tool()
    def both(ctx: Context) -> str:
        ctx.notify_prompts_changed()
        ctx.session.send_prompt_list_changed()
        return "ok"

    @ours.tool()
    def publish_only(ctx: Context) -> str:
        ctx.notify_tools_changed()
        return "ok"

    @ours.tool()
    def session_only(ctx: Context) -> str:
        ctx.session.send_tool_list_changed()
        return "ok"

    @ours.tool()
    def end(ctx: Context) -> str:
        ctx.notify_resources_changed()
        ctx.session.send_resource_list_changed()
        return "ok"

    return ours


def _official_changes(mode: str) -> list[str]:
    theirs = _official_story()

    async def run() -> list[str]:
        heard: list[str] = []
        done = anyio.Event()

        async def on_message(message: Any) -> None:
            method = getattr(getattr(message, "root", message), "method", None)
            if isinstance(method, str):
                heard.append(method)
                if method == END:
                    done.set()

        async with OfficialClient(theirs, mode=mode, message_handler=on_message) as client:
            if mode == "legacy":
                for name in STORY:
                    await client.call_tool(name, {})
                with anyio.fail_after(WAIT):
                    await done.wait()
                return heard
            async with client.listen(tools_list_changed=True, prompts_list_changed=True,
                                     resources_list_changed=True) as sub:
                for name in STORY:
                    await client.call_tool(name, {})
                events: list[str] = []
                with anyio.fail_after(WAIT):
                    async for event in sub:
                        events.append(type(event).__name__)
                        if type(event).__name__ == "ResourcesListChanged":
                            return events
        raise AssertionError("the listen ended before the marker")

    return anyio.run(run)


def _our_changes(mode: str) -> list[str]:
    ours = _our_story()
    heard, on_message = heard_methods()
    with Client(ours, mode=mode, message_handler=on_message) as client:
        if mode == "legacy":
            for name in STORY:
                client.call_tool(name, {})
            methods = [heard.get(timeout=WAIT)]
            while methods[-1] != END:
                methods.append(heard.get(timeout=WAIT))
            return methods
        with client.listen(tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True) as sub:
            for name in STORY:
                client.call_tool(name, {})
            events = [type(sub.next(timeout=WAIT)).__name__]
            while events[-1] != "ResourcesListChanged":
                events.append(type(sub.next(timeout=WAIT)).__name__)
            return events


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_list_changes_reach_each_era_as_the_official_sdk_sends_them(mode: str) -> None:
    """``ctx.notify_*_changed()`` publishes to 2026-07-28 listens only and ``ctx.session.send_*``
    tells a legacy session only: a tool doing both is heard once in each era."""
    official = _official_changes(mode)
    assert _our_changes(mode) == official
    if mode == "legacy":
        assert official == ["notifications/prompts/list_changed", "notifications/tools/list_changed", END]
    else:
        assert official == ["PromptsListChanged", "ToolsListChanged", "ResourcesListChanged"]


def forecast_today(city: str, days: int = 1) -> str:
    return city


def forecast(city: str) -> str:
    return city


def test_a_tool_registered_under_another_name_names_its_models_after_its_function() -> None:
    """Of two functions registered as ``forecast`` the first is kept, its schemas titled and its
    validation errors worded after ``forecast_today``, as the official SDK does."""
    theirs, ours = OfficialServer("w"), MCPServer("w")
    for server in (theirs, ours):
        server.tool(name="forecast")(forecast_today)
        server.tool(name="forecast")(forecast)

    async def official_call() -> str:
        async with OfficialClient(theirs, mode="legacy") as client:
            return (await client.call_tool("forecast", {"days": "x"})).content[0].text  # type: ignore[union-attr]

    official = [(t.name, json.dumps(t.input_schema), json.dumps(t.output_schema)) for t in anyio.run(theirs.list_tools)]
    mine = [(t.name, json.dumps(t.input_schema), json.dumps(t.output_schema)) for t in ours.list_tools()]
    assert mine == official
    assert json.loads(mine[0][1])["title"] == "forecast_todayArguments"
    with Client(ours, mode="legacy") as client:
        text = client.call_tool("forecast", {"days": "x"}).content[0].text  # type: ignore[union-attr]
    assert text == anyio.run(official_call)
    assert "validation errors for forecast_todayArguments" in text


class Place(BaseModel):
    city: str
    country: str = "FR"


def locate(place: Place, radius_km: float = 5.0) -> Place:
    return place


def ping() -> dict[str, int]:
    return {"pong": 1}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_listed_schemas_have_their_keywords_in_the_official_order(mode: str) -> None:
    """What the official SDK's wire models make of a schema's key order, era by era (legacy:
    ``properties, required, type`` first; 2026-07-28: ``type`` first), is what a client prints."""
    theirs, ours = OfficialServer("w"), MCPServer("w")
    for fn in (forecast_today, locate, ping):
        theirs.tool()(fn)
        ours.tool()(fn)

    async def official_listing() -> list[tuple[str, str]]:
        async with OfficialClient(theirs, mode=mode) as client:
            return [(json.dumps(t.input_schema), json.dumps(t.output_schema)) for t in (await client.list_tools()).tools]

    with Client(ours, mode=mode) as client:
        mine = [(json.dumps(t.input_schema), json.dumps(t.output_schema)) for t in client.list_tools().tools]
    assert mine == anyio.run(official_listing)
    first = "type" if mode == "auto" else "properties"
    assert [next(iter(json.loads(schema))) for schema, _ in mine] == [first] * 3
    direct = ours.list_tools()[0].input_schema  # in-process, the order pydantic made, as officially
    assert list(direct) == list(anyio.run(theirs.list_tools)[0].input_schema) == ["properties", "required", "title", "type"]
