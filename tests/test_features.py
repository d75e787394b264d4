"""Resources, templates, prompts, completion, logging, progress and legacy body sampling/roots,
through the public client over each transport and era."""

import base64
import threading
import time
from typing import Any, Callable

from conftest import ERAS
import pytest
import requests
from pydantic import Field

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import MCPServer
from minimcp.server.mcpserver import AssistantMessage, Context, Image, UserMessage
from minimcp.server.mcpserver.exceptions import ResourceNotFoundError
from minimcp.shared.exceptions import MCPDeprecationWarning
from minimcp.types import (
    Completion,
    CreateMessageResult,
    ListRootsResult,
    PromptReference,
    Root,
    SamplingMessage,
    TextContent,
)

#: ``chatty`` logs through ``ctx.info``, protocol logging, which warns as deprecated (as officially);
#: ``test_logging_and_progress`` checks that it does.
pytestmark = pytest.mark.filterwarnings("ignore:protocol logging is deprecated:minimcp.shared.exceptions.MCPDeprecationWarning")

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def library() -> MCPServer:
    mcp = MCPServer("Library")

    @mcp.resource("config://app", mime_type="application/json")
    def config() -> dict[str, Any]:
        """App settings."""
        return {"theme": "dark"}

    @mcp.resource("file://logo.png", mime_type="image/png")
    def logo() -> bytes:
        return PNG

    @mcp.resource("books://{isbn}/summary")
    def summary(isbn: str, ctx: Context) -> str:
        if isbn == "0":
            raise ResourceNotFoundError(f"No book {isbn}")
        if isbn == "crash":
            raise RuntimeError("disk on fire")
        return f"Summary of {isbn} ({type(ctx).__name__})"

    @mcp.prompt()
    def review(code: str, language: str = Field(default="python", description="Language of the code")) -> str:
        """Review some code."""
        return f"Review this {language}: {code}"

    @mcp.prompt(title="Chat")
    def chat(topic: str) -> list[Any]:
        return [UserMessage(f"Tell me about {topic}"), AssistantMessage("Gladly."), UserMessage(Image(data=PNG))]

    @mcp.completion()
    def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if isinstance(ref, PromptReference) and argument.name == "language":
            return Completion(values=[v for v in ("python", "perl", "php") if v.startswith(argument.value)])
        return None

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        for n, text in enumerate(("one", "two", "three")):
            ctx.info(text)
            ctx.report_progress(n + 1, 3, text)
        return "done"

    @mcp.tool()
    def ask_model(ctx: Context) -> str:
        answer = ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))], max_tokens=5,
            related_request_id=ctx.request_context.request_id)
        roots = ctx.session.list_roots(related_request_id=ctx.request_context.request_id)
        return f"{answer.content.text} / {len(roots.roots)} roots"

    return mcp


@ERAS
def test_resources_and_templates(connect: Callable[..., Client], mode: str) -> None:
    with connect(library(), mode=mode) as client:
        listed = {r.uri: r for r in client.list_resources().resources}
        assert listed["config://app"].description == "App settings."
        assert [t.uri_template for t in client.list_resource_templates().resource_templates] == \
            ["books://{isbn}/summary"]
        (config,) = client.read_resource("config://app").contents
        assert (config.mime_type, config.text) == ("application/json", '{\n  "theme": "dark"\n}')  # indent=2, as the official SDK writes it
        (logo,) = client.read_resource("file://logo.png").contents
        assert base64.b64decode(logo.blob) == PNG and logo.mime_type == "image/png"
        (summary,) = client.read_resource("books://42/summary").contents
        assert summary.text == "Summary of 42 (Context)" and summary.uri == "books://42/summary"
        with pytest.raises(MCPError) as missing:
            client.read_resource("books://0/summary")
        assert (missing.value.code, str(missing.value), missing.value.data) == \
            (-32602, "No book 0", {"uri": "books://0/summary"})
        with pytest.raises(MCPError) as unknown:
            client.read_resource("nothing://here")
        assert unknown.value.code == -32602  # both eras, as the official SDK
        assert str(unknown.value) == "Unknown resource: nothing://here"
        with pytest.raises(MCPError) as crashed:
            client.read_resource("books://crash/summary")
        assert crashed.value.code == -32603
        assert "disk on fire" not in str(crashed.value)


@ERAS
def test_prompts(connect: Callable[..., Client], mode: str) -> None:
    with connect(library(), mode=mode) as client:
        prompts = {p.name: p for p in client.list_prompts().prompts}
        assert [(a.name, a.required, a.description) for a in prompts["review"].arguments] == [
            ("code", True, None), ("language", False, "Language of the code")]
        review = client.get_prompt("review", {"code": "x = 1"})
        assert review.messages[0].role == "user" and review.messages[0].content.text == "Review this python: x = 1"
        chat = client.get_prompt("chat", {"topic": "owls"})
        assert [m.role for m in chat.messages] == ["user", "assistant", "user"]
        assert chat.messages[2].content.type == "image" and chat.messages[2].content.mime_type == "image/png"
        with pytest.raises(MCPError):
            client.get_prompt("review", {})
        with pytest.raises(MCPError):
            client.get_prompt("nope", {})


@ERAS
def test_completion(connect: Callable[..., Client], mode: str) -> None:
    with connect(library(), mode=mode) as client:
        result = client.complete(PromptReference(type="ref/prompt", name="review"), {"name": "language", "value": "p"})
    assert result.completion.values == ["python", "perl", "php"]


@ERAS
def test_logging_and_progress(connect: Callable[..., Client], mode: str) -> None:
    logged: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []
    with connect(library(), mode=mode, logging_callback=logged.append, log_level="info") as client:
        if mode == "legacy":
            client.set_logging_level("info")
        with pytest.warns(MCPDeprecationWarning, match="protocol logging is deprecated"):
            result = client.call_tool("chatty", {}, progress_callback=lambda p, t, m: progress.append((p, t, m)))
    assert result.content[0].text == "done"
    assert [entry.data for entry in logged] == ["one", "two", "three"]
    assert progress == [(1, 3, "one"), (2, 3, "two"), (3, 3, "three")]


def test_legacy_body_sampling_and_roots(connect: Callable[..., Client]) -> None:
    def sample(context: ClientRequestContext, params: Any) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="hello"), model="m")

    def roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///a")])

    with connect(library(), mode="legacy", sampling_callback=sample, list_roots_callback=roots) as client:
        assert client.call_tool("ask_model", {}).content[0].text == "hello / 1 roots"


def test_a_connected_client_is_shared_by_threads(connect: Callable[..., Client]) -> None:
    results: list[str] = []
    with connect(library()) as client:
        threads = [threading.Thread(target=lambda: results.append(client.call_tool("chatty", {}).content[0].text))
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == ["done"] * 8


def test_a_client_timeout_cancels_the_call_on_the_server(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("Slow")
    stopped = threading.Event()

    @mcp.tool()
    def crawl(ctx: Context) -> str:
        for _ in range(500):
            if ctx.cancelled:
                stopped.set()
                return "stopped"
            threading.Event().wait(0.01)
        return "finished"

    with connect(mcp, mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("crawl", {}, read_timeout_seconds=0.3)
        assert raised.value.code == -32001
        assert stopped.wait(3)


def test_a_legacy_client_starts_over_when_its_session_is_gone(serve_http: Callable[..., str]) -> None:
    mcp = MCPServer("Echo")
    seen: list[Any] = []

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def announce(ctx: Context) -> str:
        ctx.session.send_tool_list_changed()
        return "sent"

    url = serve_http(mcp, keepalive_interval=0.1)
    with Client(url, mode="legacy", message_handler=seen.append) as client:
        assert client.call_tool("echo", {"text": "one"}).content[0].text == "one"
        old = client.session.transport.session_id
        assert requests.delete(url, headers={"Mcp-Session-Id": old}, timeout=10).status_code == 200
        assert client.call_tool("echo", {"text": "two"}).content[0].text == "two"
        assert client.session.transport.session_id not in (None, old)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not seen:
            client.call_tool("announce", {})
            time.sleep(0.2)
    assert any(getattr(m, "method", None) == "notifications/tools/list_changed" for m in seen)


def test_raise_exceptions_shows_the_real_failure_in_memory() -> None:
    with Client(library()) as client, pytest.raises(MCPError) as sanitized:
        client.read_resource("books://crash/summary")
    assert str(sanitized.value) == "Error creating resource from template books://crash/summary"  # as officially
    with Client(library(), raise_exceptions=True) as client, pytest.raises(MCPError) as real:
        client.read_resource("books://crash/summary")
    assert str(real.value) == "Error creating resource from template books://crash/summary"
    with Client(library(), raise_exceptions=True) as client:
        assert client.call_tool("chatty", {}).content[0].text == "done"


def test_a_tool_that_exits_still_answers_and_the_server_keeps_serving(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("Exits")

    @mcp.tool()
    def leave() -> str:
        raise SystemExit(3)

    @mcp.tool()
    def stay() -> str:
        return "here"

    with connect(mcp) as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("leave", {}, read_timeout_seconds=10)
        assert raised.value.code == -32603
        assert client.call_tool("stay", {}).content[0].text == "here"
