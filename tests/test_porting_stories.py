"""What the official SDK 2.3.0's stories and examples need once ported by the rule: a public way to
remove a resource, the threading side of the anyio porting table (cancelling a call, bounded waits
on a listen stream), and the HTTP app's ``debug=`` and custom-route errors. Each runs in memory and
over a real loopback HTTP server, in both eras where the era matters.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable

import pytest
import requests
from pydantic import ValidationError
from werkzeug.wrappers import Response

from minimcp import Client, MCPError, StdioServerParameters, types
from minimcp.client import CallCancelled, CancelScope
from minimcp.client.subscriptions import ResourceUpdated, ToolsListChanged
from minimcp.server import Server, ServerRequestContext
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.server.mcpserver.exceptions import ResourceNotFoundError
from minimcp.server.mcpserver.resources import FunctionResource
from minimcp.shared.exceptions import MCPDeprecationWarning

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent / "servers"))
from notebook_server import notebook  # noqa: E402

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


def test_the_official_everything_server_private_path_replaces_an_input_schema(
        connect: Callable[..., Client]) -> None:
    mcp = _board()
    schema = {"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema",
              "properties": {"note_id": {"type": "string"}}}
    mcp._tool_manager._tools["remove_note"].parameters = schema
    with connect(mcp) as client:
        listed = {tool.name: tool.input_schema for tool in client.list_tools().tools}
    assert listed["remove_note"] == schema


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


# --- anyio -> threading: cancelling a call, bounded waits on a listen stream -------------------------

COUNTDOWN = """
import threading
import time

from minimcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("countdown")
runs: list[str] = []
ended = threading.Event()


@mcp.tool()
def countdown(steps: int, ctx: Context) -> dict[str, int]:
    ended.clear()
    try:
        for step in range(1, steps + 1):
            ctx.report_progress(float(step), float(steps), f"step {step}/{steps}")
            if step == 1 and steps > 1:  # hold the call until its client gives up (10 s at most)
                deadline = time.monotonic() + 10
                while not ctx.cancelled and time.monotonic() < deadline:
                    time.sleep(0.01)
            if ctx.cancelled:
                runs.append(f"cancelled at step {step}")
                return {"completed": step}
        runs.append("completed")
        return {"completed": steps}
    finally:
        ended.set()


@mcp.tool()
def last_run() -> str:
    ended.wait(10)
    return runs[-1] if runs else "none"


if __name__ == "__main__":
    mcp.run()
"""


@pytest.fixture(params=["memory", "http", "stdio"])
def countdown(request: pytest.FixtureRequest, tmp_path: Path, serve_http: Callable[..., str]) -> Any:
    """The countdown server as ``Client(...)`` takes it: the object, its URL (keepalives every 0.1 s,
    which is how an HTTP server notices a closed stream while a tool is quiet), or a subprocess."""
    path = tmp_path / "countdown.py"
    path.write_text(COUNTDOWN)
    if request.param == "stdio":
        env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        return StdioServerParameters(command=sys.executable, args=[str(path)], env=env)
    mcp = runpy.run_path(str(path))["mcp"]
    return mcp if request.param == "memory" else serve_http(mcp, keepalive_interval=0.1)


@ERAS
def test_a_cancel_scope_cancelled_from_a_progress_callback_ends_the_call(countdown: Any, mode: str) -> None:
    """The official streaming story's cancellation, ported: ``with CancelScope() as scope`` around the
    call, ``scope.cancel()`` in its progress callback; the server stops, the session lives on."""
    in_flight = threading.Event()

    def cancel_once_in_flight(progress: float, total: float | None, message: str | None) -> None:
        in_flight.set()
        scope.cancel()

    with Client(countdown, mode=mode) as client:
        with CancelScope() as scope:
            client.call_tool("countdown", {"steps": 1000}, progress_callback=cancel_once_in_flight)
            raise AssertionError("the cancelled call returned")
        assert in_flight.is_set() and scope.cancelled_caught
        assert client.call_tool("last_run").structured_content == {"result": "cancelled at step 1"}
        assert client.call_tool("countdown", {"steps": 1}).structured_content == {"completed": 1}


def test_an_outer_scope_cancelled_from_another_thread_is_caught_by_the_outer_block(countdown: Any) -> None:
    in_flight = threading.Event()
    with Client(countdown) as client:
        canceller = threading.Thread(target=lambda: in_flight.wait(10) and outer.cancel())
        with CancelScope() as outer:
            with CancelScope() as inner:
                canceller.start()
                client.call_tool("countdown", {"steps": 1000}, progress_callback=lambda *_: in_flight.set())
        canceller.join(10)
        assert (outer.cancelled_caught, inner.cancelled_caught) == (True, False)
        assert client.call_tool("last_run").structured_content == {"result": "cancelled at step 1"}


def test_a_call_inside_an_already_cancelled_scope_is_never_sent() -> None:
    mcp = MCPServer("counted")
    calls: list[str] = []

    @mcp.tool()
    def count() -> int:
        calls.append("called")
        return len(calls)

    with Client(mcp) as client:
        with CancelScope() as scope:
            scope.cancel()
            with pytest.raises(CallCancelled) as cancelled:
                client.call_tool("count")
            assert cancelled.value.scope is scope
        assert client.call_tool("count").structured_content == {"result": 1}
    assert calls == ["called"]


@pytest.mark.parametrize("transport", ["memory", "http"])
def test_subscription_next_takes_a_timeout_and_close_stops_a_loop(transport: str,
                                                                   serve_http: Callable[..., str]) -> None:
    """``with anyio.fail_after(10): event = await anext(sub)`` ports to ``sub.next(timeout=10)``; a loop
    over ``sub`` on another thread stops at ``sub.close()``."""
    mcp = notebook()
    with Client(mcp if transport == "memory" else serve_http(mcp)) as client:
        with client.listen(tools_list_changed=True, resource_subscriptions=["note://todo"]) as sub:
            with pytest.raises(TimeoutError, match=r"no event on subscription 'listen-\d+' within 0.2s"):
                sub.next(timeout=0.2)
            client.call_tool("edit_note", {"name": "todo", "text": "water plants"})
            assert sub.next(timeout=10) == ResourceUpdated(uri="note://todo")

            seen: list[Any] = []
            looping = threading.Thread(target=lambda: seen.extend(sub) or seen.append("loop ended"))
            looping.start()
            client.call_tool("enable_search", {})
            sub.close()
            looping.join(10)
            assert not looping.is_alive() and seen[-1] == "loop ended"
            assert set(seen[:-1]) <= {ToolsListChanged()}
        assert "search" in {tool.name for tool in client.list_tools().tools}


def test_log_level_sends_no_set_level_to_a_legacy_server() -> None:
    """The official client applies ``log_level`` only to 2026-07-28 requests; a legacy server whose
    ``logging/setLevel`` handler refuses is still reachable (the official streaming story's)."""
    levels: list[str] = []

    def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        levels.append(params.level)
        raise NotImplementedError

    def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    with pytest.warns(MCPDeprecationWarning):
        server = Server("quiet", on_list_tools=list_tools, on_set_logging_level=set_level)
    with Client(server, mode="legacy", log_level="info") as client:
        assert client.list_tools().tools == []
    assert levels == []


def test_a_question_related_to_the_request_by_ctx_request_id_reaches_the_client(
        connect: Callable[..., Client]) -> None:
    """``ctx.request_id`` is text, as officially; the everything-server asks with
    ``related_request_id=ctx.request_id`` and the question must ride this request's stream."""
    mcp = MCPServer("asker")

    @mcp.tool()
    def ask(ctx: Context) -> str:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
        sampled = ctx.session.create_message(messages=[message], max_tokens=10, related_request_id=ctx.request_id)
        roots = ctx.session.list_roots(related_request_id=ctx.request_id)
        return f"{sampled.content.text} / {len(roots.roots)} roots"

    def sample(context: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sampled"),
                                         model="m")

    def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///a")])

    with connect(mcp, mode="legacy", sampling_callback=sample, list_roots_callback=roots) as client:
        assert client.call_tool("ask").content[0].text == "sampled / 1 roots"


def test_call_tool_refuses_arguments_that_are_not_a_mapping_before_sending(connect: Callable[..., Client]) -> None:
    """As the official client: a pydantic ``ValidationError`` on the caller's side, nothing sent."""
    mcp = MCPServer("args")
    calls: list[int] = []

    @mcp.tool()
    def add(a: int) -> int:
        calls.append(a)
        return a + 1

    with connect(mcp) as client:
        with pytest.raises(ValidationError, match="CallToolRequestParams\narguments\n  Input should be a valid dict"):
            client.call_tool("add", "x")  # type: ignore[arg-type]
        assert client.call_tool("add", MappingProxyType({"a": 1})).structured_content == {"result": 2}
    assert calls == [1]
