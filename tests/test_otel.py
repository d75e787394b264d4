"""OpenTelemetry, as the official SDK emits it: a CLIENT span per request sent, a SERVER span per
message received, the client's trace context carried in ``_meta`` to parent the server's span.

Client and server run in this process over real loopback HTTP (both eras), so one in-memory
exporter sees both sides. The names and attributes asserted are those mcp 2.3.0 emits for the same
calls. A process's tracer provider can be set only once, so these tests switch tracing on for
themselves and off when they end: the rest of the suite keeps the wire it had.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from pydantic import BaseModel
from conftest import (LEGACY, MODES, ROOT, final_message, legacy_handshake, modern_headers, modern_meta, post,
                      request_message)
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import Server
from minimcp.server.context import CallNext, HandlerResult, ServerRequestContext
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.server.otel import OpenTelemetryMiddleware
from minimcp.shared import otel
from minimcp.types import ElicitResult

_EXPORTER = InMemorySpanExporter()


def _install_provider() -> None:
    """The process's provider, with this module's exporter; done at the first test that traces (not
    at collection, which would trace every test of the suite)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def spans() -> Iterator[Callable[[], list[ReadableSpan]]]:
    """Tracing on, a clean exporter; yields what has been exported so far."""
    _install_provider()
    otel.set_tracing(True)
    _EXPORTER.clear()
    yield lambda: list(_EXPORTER.get_finished_spans())
    otel.set_tracing(False)
    _EXPORTER.clear()


class Confirm(BaseModel):
    ok: bool


def _server() -> MCPServer:
    mcp = MCPServer("traced")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool()
    def boom() -> str:
        raise ValueError("kaput")

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"hello {name}"

    return mcp


def _named(found: list[ReadableSpan], name: str) -> ReadableSpan:
    matches = [span for span in found if span.name == name]
    assert len(matches) == 1, [span.name for span in found]
    return matches[0]


@MODES
def test_every_request_has_a_client_span_parenting_the_server_span(
        serve_http: Callable[..., str], spans: Callable[[], list[ReadableSpan]], mode: str, version: str) -> None:
    with Client(serve_http(_server()), mode=mode) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    found = spans()
    sent = _named(found, "MCP send tools/call add")
    served = _named(found, "tools/call add")
    assert sent.kind == SpanKind.CLIENT and served.kind == SpanKind.SERVER
    assert served.parent is not None and served.parent.span_id == sent.context.span_id
    assert served.context.trace_id == sent.context.trace_id
    request_id = sent.attributes["jsonrpc.request.id"]
    assert dict(sent.attributes) == {"mcp.method.name": "tools/call", "jsonrpc.request.id": request_id}
    assert dict(served.attributes) == {
        "mcp.method.name": "tools/call", "mcp.protocol.version": version, "jsonrpc.request.id": request_id,
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add",
    }
    assert sent.status.status_code == served.status.status_code == StatusCode.UNSET
    # the handshake of the era is traced the same way, and the legacy client's notification is a root
    opening = "MCP send initialize" if mode == "legacy" else "MCP send server/discover"
    _named(found, opening)
    if mode == "legacy":
        notified = _named(found, "notifications/initialized")
        assert notified.parent is None and "jsonrpc.request.id" not in notified.attributes


@MODES
def test_failures_are_marked_as_the_official_sdk_marks_them(
        serve_http: Callable[..., str], spans: Callable[[], list[ReadableSpan]], mode: str, version: str) -> None:
    with Client(serve_http(_server()), mode=mode) as client:
        assert client.call_tool("boom", {}).is_error
        with pytest.raises(MCPError):
            client.read_resource("nowhere://x")
        assert client.get_prompt("greet", {"name": "Ada"}).messages
    found = spans()
    tool = _named(found, "tools/call boom")
    assert tool.attributes["error.type"] == "tool_error" and tool.status.status_code == StatusCode.ERROR
    assert _named(found, "MCP send tools/call boom").status.status_code == StatusCode.UNSET  # a result, not an error
    for name in ("resources/read", "MCP send resources/read"):
        span = _named(found, name)
        assert span.attributes["error.type"] == span.attributes["rpc.response.status_code"] == "-32602"
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == "Unknown resource: nowhere://x"
    assert _named(found, "prompts/get greet").attributes["gen_ai.prompt.name"] == "greet"


def test_a_question_to_the_client_is_a_client_span_of_the_server(
        serve_http: Callable[..., str], spans: Callable[[], list[ReadableSpan]]) -> None:
    mcp = MCPServer("asking")

    @mcp.tool()
    def confirm(ctx: Context) -> str:
        return ctx.elicit("Sure?", schema=Confirm).action

    def yes(context: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    with Client(serve_http(mcp), mode="legacy", elicitation_callback=yes) as client:
        assert client.call_tool("confirm", {}).content[0].text == "accept"
    found = spans()
    served = _named(found, "tools/call confirm")
    asked = _named(found, "MCP send elicitation/create")
    assert asked.kind == SpanKind.CLIENT
    assert asked.parent is not None and asked.parent.span_id == served.context.span_id
    assert dict(asked.attributes) == {"mcp.method.name": "elicitation/create",
                                      "jsonrpc.request.id": asked.attributes["jsonrpc.request.id"]}


def test_the_trace_context_travels_in_meta(serve_http: Callable[..., str],
                                           spans: Callable[[], list[ReadableSpan]]) -> None:
    metas: list[dict[str, Any]] = []

    def record(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            metas.append(dict(ctx.meta or {}))
        return call_next(ctx)

    mcp = _server()
    mcp.middleware.append(record)
    with Client(serve_http(mcp), mode="legacy") as client:
        client.call_tool("add", {"a": 1, "b": 2})
        otel.set_tracing(False)
        client.call_tool("add", {"a": 1, "b": 2})
    sent = _named(spans(), "MCP send tools/call add")
    context = sent.context
    assert metas[0]["traceparent"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    assert "traceparent" not in metas[1]  # one switch: no span, nothing injected
    assert [span.name for span in spans()].count("tools/call add") == 1


@pytest.mark.parametrize("traceparent", ["garbage", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", 7])
def test_a_malformed_traceparent_is_ignored_and_the_server_answers(
        serve_http: Callable[..., str], spans: Callable[[], list[ReadableSpan]], traceparent: Any) -> None:
    url = serve_http(_server())
    legacy = legacy_handshake(url)
    assert legacy.rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2},
                                     "_meta": {"traceparent": traceparent}})["result"]["structuredContent"] == {"result": 4}
    params = {"name": "add", "arguments": {"a": 1, "b": 1}}
    message = request_message("tools/call", {**params, "_meta": modern_meta(traceparent=traceparent)})
    answer = final_message(post(url, message, headers=modern_headers("tools/call", params)), message["id"])
    assert answer["result"]["structuredContent"] == {"result": 2}
    legacy.rpc("tools/call", {"name": "add", "arguments": {"a": 0, "b": 0}, "_meta": 1})  # refused, not a crash
    assert legacy.call_tool("add", {"a": 3, "b": 3})["structuredContent"] == {"result": 6}
    served = [span for span in spans() if span.name == "tools/call add"]
    assert len(served) == 4 and all(span.parent is None for span in served)


def test_a_remote_parent_from_any_client_is_honoured(serve_http: Callable[..., str],
                                                      spans: Callable[[], list[ReadableSpan]]) -> None:
    url = serve_http(_server())
    legacy = legacy_handshake(url)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    legacy.rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}, "_meta": {"traceparent": parent}})
    served = _named(spans(), "tools/call add")
    assert served.parent is not None and served.parent.is_remote
    assert (served.context.trace_id, served.parent.span_id) == (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)


def test_a_remote_parent_under_another_propagator_is_honoured(serve_http: Callable[..., str],
                                                              spans: Callable[[], list[ReadableSpan]]) -> None:
    """The server skips extracting a ``_meta`` that holds none of the global propagator's fields;
    the fields are the configured propagator's own, not W3C's ``traceparent``."""
    from opentelemetry import propagate
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    class Renamed(TraceContextTextMapPropagator):
        """W3C trace context, read from and written to ``x-trace``."""

        def extract(self, carrier: Any, context: Any = None, getter: Any = None) -> Any:
            return super().extract({"traceparent": carrier.get("x-trace")}, context)

        @property
        def fields(self) -> set[str]:
            return {"x-trace"}

    url = serve_http(_server())
    legacy = legacy_handshake(url)
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(Renamed())
    try:
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        legacy.rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}, "_meta": {"x-trace": parent}})
    finally:
        propagate.set_global_textmap(before)
    served = _named(spans(), "tools/call add")
    assert served.parent is not None and served.parent.is_remote
    assert (served.context.trace_id, served.parent.span_id) == (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)


def test_the_span_middleware_comes_first_as_in_the_official_list() -> None:
    def mine(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        return call_next(ctx)

    assert [type(layer) for layer in Server("low").middleware] == [OpenTelemetryMiddleware]
    mcp = MCPServer("high", middleware=[mine])
    assert isinstance(mcp.middleware[0], OpenTelemetryMiddleware) and mcp.middleware[1:] == [mine]


def _python(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh process with this checkout importable: tracing state (the API's
    provider, set once per process) starts clean there. ``env`` adds environment variables."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **env})


def test_a_program_runs_without_opentelemetry_installed(tmp_path: Any) -> None:
    """The extra is optional: with ``opentelemetry`` unimportable a server and its client work, and
    nothing is in the middleware list."""
    program = tmp_path / "no_otel.py"
    program.write_text(textwrap.dedent('''
        import sys
        sys.modules["opentelemetry"] = None  # as if not installed: every import of it fails
        from minimcp import Client
        from minimcp.server.mcpserver import MCPServer
        from minimcp.shared import otel

        mcp = MCPServer("plain")

        @mcp.tool()
        def add(a: int, b: int) -> int:
            return a + b

        otel.set_tracing(True)
        for mode in ("legacy", "auto"):
            with Client(mcp, mode=mode) as client:
                print(client.call_tool("add", {"a": 1, "b": 2}).structured_content["result"])
        print(otel.available(), otel.tracing(), mcp.middleware)
        print(any(name.startswith("opentelemetry") and sys.modules[name] for name in list(sys.modules)))
    '''))
    done = _python(str(program))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["3", "3", "False False []", "False", ""]


_LATE_PROVIDER = textwrap.dedent('''
    import os, sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from minimcp import Client
    from minimcp.server.mcpserver import MCPServer

    mcp = MCPServer("late")

    @mcp.tool()
    def traced() -> bool:
        return trace.get_current_span().is_recording()

    def call(client):
        return client.call_tool("traced", {}).structured_content["result"]

    with Client(mcp, mode=sys.argv[1]) as client:
        if "OTEL_PYTHON_TRACER_PROVIDER" in os.environ:  # nothing asked the API for its provider yet
            print(call(client))
        else:
            print([call(client) for _ in range(3)])  # no provider yet
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            print(call(client), sorted(span.name for span in exporter.get_finished_spans()))
''')


@MODES
def test_a_provider_set_after_untraced_calls_records_the_next_one(tmp_path: Any, mode: str, version: str) -> None:
    """Untraced requests do not ask the API for its provider each time (that costs more than the
    rest of their tracing), yet a provider set after them records the very next call, on both sides."""
    program = tmp_path / "late_provider.py"
    program.write_text(_LATE_PROVIDER)
    done = _python(str(program), mode)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["[False, False, False]",
                                        "True ['MCP send tools/call traced', 'tools/call traced']", ""]


@MODES
def test_the_provider_the_environment_names_records_the_first_call(tmp_path: Any, mode: str, version: str) -> None:
    """``OTEL_PYTHON_TRACER_PROVIDER`` names a provider the API loads on its first use: the first
    call is traced though nothing but minimcp asked for a provider."""
    program = tmp_path / "env_provider.py"
    program.write_text(_LATE_PROVIDER)
    done = _python(str(program), mode, OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["True", ""]


def test_the_environment_switch_sets_the_default(tmp_path: Any) -> None:
    done = _python("-c", "from minimcp.shared import otel; print(otel.tracing())", MINIMCP_TRACING="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_refused_request_is_traced_and_the_server_keeps_serving(
        serve_http: Callable[..., str], spans: Callable[[], list[ReadableSpan]]) -> None:
    url = serve_http(_server())
    message = request_message("no/such", {})
    legacy = legacy_handshake(url)
    response = post(url, message, session_id=legacy.session_id, protocol_version=LEGACY)
    assert response.json()["error"]["code"] == -32601
    assert legacy.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}
    refused = _named(spans(), "no/such")
    assert refused.attributes["error.type"] == "-32601" and refused.status.status_code == StatusCode.ERROR


def test_a_listen_is_traced_without_adopting_the_calls_made_while_it_is_open(
        serve_http: Callable[..., str], spans: Callable[[], list[ReadableSpan]]) -> None:
    with Client(serve_http(_server()), mode="auto") as client, client.listen(tools_list_changed=True):
        client.call_tool("add", {"a": 1, "b": 2})
    found = spans()
    listen = _named(found, "MCP send subscriptions/listen")
    served = _named(found, "subscriptions/listen")
    assert listen.kind == SpanKind.CLIENT and listen.end_time is not None
    assert served.parent is not None and served.parent.span_id == listen.context.span_id
    assert _named(found, "MCP send tools/call add").parent is None  # the caller's own call, not the listen's child
