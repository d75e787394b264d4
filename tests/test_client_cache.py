"""The client's response cache (``Client(cache=...)``, on by default as in the official SDK).

A WSGI layer in front of a real minimcp server counts the requests that reach it by method, so
each test sees which calls the cache answered and which went to the server.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from minimcp import Client
from minimcp.client import CacheConfig, CacheEntry, CacheKey, InMemoryResponseCacheStore
from minimcp.server import CacheHint, MCPServer
from minimcp.server.mcpserver import Context
from minimcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

MODERN = "2026-07-28"
HOUR = 3_600_000


class Counting:
    """Counts the JSON-RPC methods POSTed through it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.methods: Counter[str] = Counter()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        if body:
            self.methods[json.loads(body).get("method", "answer")] += 1
        environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)


def _server(hints: dict[str, CacheHint] | None = None) -> MCPServer:
    mcp = MCPServer("cached", cache_hints=hints)
    state = {"version": 1}

    @mcp.tool()
    def bump(ctx: Context) -> str:
        """Changes the tool list and the note, and says so."""
        state["version"] += 1
        ctx.notify_tools_changed()
        ctx.notify_resource_updated("note://today")
        return "bumped"

    @mcp.resource("note://today")
    def today() -> str:
        return f"version {state['version']}"

    @mcp.prompt()
    def greet() -> str:
        return "hello"

    return mcp


@pytest.fixture
def serve(serve_wsgi: Callable[[Any], str]) -> Iterator[Callable[..., tuple[str, Counting]]]:
    apps: list[Any] = []

    def start(mcp: MCPServer) -> tuple[str, Counting]:
        app = mcp.wsgi_app()
        apps.append(app)
        counting = Counting(app)
        return serve_wsgi(counting) + app.path, counting

    yield start
    for app in apps:
        app.close()


LISTINGS = {"tools/list": "list_tools", "prompts/list": "list_prompts", "resources/list": "list_resources",
            "resources/templates/list": "list_resource_templates"}


@pytest.mark.parametrize("method", LISTINGS)
def test_a_hinted_listing_is_served_from_the_cache(serve: Callable[..., tuple[str, Counting]], method: str) -> None:
    url, counting = serve(_server({method: CacheHint(ttl_ms=HOUR)}))
    with Client(url, mode=MODERN) as client:
        first = getattr(client, LISTINGS[method])()
        second = getattr(client, LISTINGS[method])()
        assert second == first and second is not first
    assert counting.methods[method] == 1


def test_without_a_hint_nothing_is_cached(serve: Callable[..., tuple[str, Counting]]) -> None:
    url, counting = serve(_server())
    with Client(url, mode=MODERN) as client:
        client.list_tools()
        client.list_tools()
    assert counting.methods["tools/list"] == 2


def test_legacy_answers_are_not_cached(serve: Callable[..., tuple[str, Counting]]) -> None:
    url, counting = serve(_server({"tools/list": CacheHint(ttl_ms=HOUR)}))
    with Client(url, mode="legacy") as client:
        client.list_tools()
        client.list_tools()
    assert counting.methods["tools/list"] == 2


def test_modes_bypass_and_refresh_and_none(serve: Callable[..., tuple[str, Counting]]) -> None:
    url, counting = serve(_server({"tools/list": CacheHint(ttl_ms=HOUR)}))
    with Client(url, mode=MODERN) as client:
        client.list_tools()
        client.list_tools(cache_mode="bypass")
        client.list_tools(cache_mode="refresh")
        client.list_tools()
    assert counting.methods["tools/list"] == 3
    with Client(url, mode=MODERN, cache=None) as client:
        client.list_tools()
        client.list_tools()
    assert counting.methods["tools/list"] == 5


@pytest.mark.parametrize("changed_by", ["this client", "another endpoint"])
def test_a_listen_event_evicts_what_it_makes_stale(serve: Callable[..., tuple[str, Counting]], changed_by: str) -> None:
    """Made through another endpoint of the same server (counted apart), the change reaches this
    client on its listen stream alone."""
    mcp = _server({"tools/list": CacheHint(ttl_ms=HOUR), "resources/read": CacheHint(ttl_ms=HOUR)})
    url, counting = serve(mcp)
    with contextlib.ExitStack() as clients:
        client = clients.enter_context(Client(url, mode=MODERN))
        changer = client if changed_by == "this client" else clients.enter_context(Client(serve(mcp)[0], mode=MODERN))
        client.list_tools()
        assert client.read_resource("note://today").contents[0].text == "version 1"
        assert client.read_resource("note://today").contents[0].text == "version 1"
        assert counting.methods["resources/read"] == 1
        with client.listen(tools_list_changed=True, resource_subscriptions=["note://today"]) as sub:
            changer.call_tool("bump", {})
            events = {sub.next(timeout=10), sub.next(timeout=10)}
        assert events == {ToolsListChanged(), ResourceUpdated(uri="note://today")}
        client.list_tools()
        assert client.read_resource("note://today").contents[0].text == "version 2"
    assert counting.methods["tools/list"] == 2
    assert counting.methods["resources/read"] == 2


class SlowOnTheListenThread(InMemoryResponseCacheStore):
    """Deletes late when the listen stream's own thread asks, as a store over the network might."""

    def delete(self, key: CacheKey) -> None:
        if threading.current_thread().name == "minimcp-listen":
            time.sleep(0.5)
        super().delete(key)


def test_a_listen_event_is_evicted_before_the_loop_body_reads_again(serve: Callable[..., tuple[str, Counting]]) -> None:
    """The event reaches the iterator before the stream's thread has evicted anything: the read
    right after ``next()`` must still miss the stale entry."""
    url, counting = serve(_server({"tools/list": CacheHint(ttl_ms=HOUR)}))
    cache = CacheConfig(store=SlowOnTheListenThread(), partition="me")
    with Client(url, mode=MODERN, cache=cache) as client:
        client.list_tools()
        with client.listen(tools_list_changed=True) as sub:
            client.call_tool("bump", {})
            assert sub.next(timeout=10) == ToolsListChanged()
            client.list_tools()
            assert counting.methods["tools/list"] == 2


def test_a_tool_listing_from_the_cache_still_teaches_the_session(serve: Callable[..., tuple[str, Counting]]) -> None:
    """A cached listing re-teaches a fresh session which tools exist (for output-schema checks)."""
    mcp = _server({"tools/list": CacheHint(ttl_ms=HOUR)})

    @mcp.tool()
    def answer() -> int:
        return 42

    url, counting = serve(mcp)
    with Client(url, mode=MODERN) as client:
        client.list_tools()
        client.list_tools()
        assert client.call_tool("answer", {}).structured_content == {"result": 42}
    assert counting.methods["tools/list"] == 1


def test_private_entries_stay_in_their_partition(serve: Callable[..., tuple[str, Counting]]) -> None:
    store = InMemoryResponseCacheStore()
    url, counting = serve(_server({"tools/list": CacheHint(ttl_ms=HOUR, scope="private"),
                                   "prompts/list": CacheHint(ttl_ms=HOUR, scope="public")}))
    for partition in ("alice", "bob", "alice"):
        with Client(url, mode=MODERN, cache=CacheConfig(store=store, partition=partition, share_public=True)) as client:
            client.list_tools()
            client.list_prompts()
    assert counting.methods["tools/list"] == 2  # alice's second client was served her own entry
    assert counting.methods["prompts/list"] == 1  # public, and shared on purpose


class Broken(InMemoryResponseCacheStore):
    def get(self, key: CacheKey) -> CacheEntry | None:
        raise OSError("store down")

    def set(self, key: CacheKey, entry: CacheEntry) -> None:
        raise OSError("store down")


def test_a_failing_store_is_a_miss_not_a_failure(serve: Callable[..., tuple[str, Counting]],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    url, counting = serve(_server({"tools/list": CacheHint(ttl_ms=HOUR)}))
    with Client(url, mode=MODERN, cache=CacheConfig(store=Broken(), partition="p")) as client:
        assert [tool.name for tool in client.list_tools().tools] == ["bump"]
        assert [tool.name for tool in client.list_tools().tools] == ["bump"]
    assert counting.methods["tools/list"] == 2
    assert "Response cache store operation" in caplog.text


def test_config_is_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="a custom store requires an explicit partition"):
        CacheConfig(store=InMemoryResponseCacheStore())
    with pytest.raises(ValueError, match="default_ttl_ms must be >= 0"):
        CacheConfig(default_ttl_ms=-1)
    with pytest.raises(ValueError, match="requires CacheConfig.target_id"):
        Client(MCPServer("x"), cache=CacheConfig(store=InMemoryResponseCacheStore(), partition="p"))
