"""``subscriptions/listen`` (2026-07-28) and the ``Context.notify_*`` publishers, over real HTTP.

A listen is an SSE response that stays open: the acknowledgement comes first, then every change a
handler publishes that the listen opted in to, tagged with the listen's request id.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from werkzeug.serving import make_server

from minimcp import Client
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

VERSION = "2026-07-28"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
WAIT = 5.0


def _server() -> MCPServer[Any]:
    mcp: MCPServer[Any] = MCPServer("listen-test")

    @mcp.tool()
    def change_tools(ctx: Context) -> str:
        """Announce a tools change."""
        ctx.notify_tools_changed()
        return "done"

    @mcp.tool()
    def change_prompts(ctx: Context) -> str:
        """Announce a prompts change."""
        ctx.notify_prompts_changed()
        return "done"

    @mcp.tool()
    def change_resources(ctx: Context) -> str:
        """Announce a resources list change."""
        ctx.notify_resources_changed()
        return "done"

    @mcp.tool()
    def touch(uri: str, ctx: Context) -> str:
        """Announce that one resource changed."""
        ctx.notify_resource_updated(uri)
        return "done"

    return mcp


@pytest.fixture
def served() -> Iterator[tuple[MCPServer[Any], str]]:
    mcp = _server()
    app = mcp.wsgi_app(keepalive_interval=0.5)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield mcp, f"http://127.0.0.1:{httpd.server_port}/mcp"
    finally:
        httpd.shutdown()
        thread.join(WAIT)
        app.close()


def _meta() -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


def _post(url: str, request_id: int, method: str, params: dict[str, Any], *, stream: bool = False,
          name: str | None = None) -> requests.Response:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": _meta()}}
    return requests.post(url, json=body, headers=headers, stream=stream, timeout=WAIT)


def _call(url: str, request_id: int, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    response = _post(url, request_id, "tools/call", {"name": tool, "arguments": arguments or {}}, name=tool)
    assert response.status_code == 200
    return response.json()


class _Listen:
    """An open listen stream whose JSON frames a background thread collects."""

    def __init__(self, url: str, request_id: Any, notifications: dict[str, Any]) -> None:
        self.response = _post(url, request_id, "subscriptions/listen", {"notifications": notifications}, stream=True)
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines(decode_unicode=True):
                if line and line.startswith("data:") and line[5:].strip():
                    self.frames.put(json.loads(line[5:]))
        except (requests.RequestException, AttributeError, ValueError):
            return

    def next(self, timeout: float = WAIT) -> dict[str, Any]:
        return self.frames.get(timeout=timeout)

    def close(self) -> None:
        self.response.close()


def test_ack_comes_first_and_changes_are_tagged(served: tuple[MCPServer[Any], str]) -> None:
    _, url = served
    listen = _Listen(url, "L-1", {"toolsListChanged": True})
    try:
        assert listen.response.status_code == 200
        assert listen.response.headers["Content-Type"].startswith("text/event-stream")
        ack = listen.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"toolsListChanged": True}
        assert ack["params"]["_meta"][SUBSCRIPTION_ID] == "L-1"

        assert _call(url, 2, "change_tools")["result"]["resultType"] == "complete"
        change = listen.next()
        assert change == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                          "params": {"_meta": {SUBSCRIPTION_ID: "L-1"}}}
    finally:
        listen.close()


def test_listen_receives_only_what_it_opted_in_to(served: tuple[MCPServer[Any], str]) -> None:
    _, url = served
    prompts_only = _Listen(url, 7, {"promptsListChanged": True})
    try:
        ack = prompts_only.next()
        assert ack["params"]["_meta"][SUBSCRIPTION_ID] == 7  # the id keeps its JSON type
        _call(url, 2, "change_tools")
        _call(url, 3, "change_resources")
        _call(url, 4, "change_prompts")
        change = prompts_only.next()
        assert change["method"] == "notifications/prompts/list_changed"
        with pytest.raises(queue.Empty):
            prompts_only.next(timeout=0.5)
    finally:
        prompts_only.close()


def test_resource_updates_reach_only_subscribers_of_that_uri(served: tuple[MCPServer[Any], str]) -> None:
    _, url = served
    watcher = _Listen(url, 11, {"resourceSubscriptions": ["test://watched"]})
    try:
        assert watcher.next()["params"]["notifications"] == {"resourceSubscriptions": ["test://watched"]}
        _call(url, 2, "touch", {"uri": "test://other"})
        _call(url, 3, "touch", {"uri": "test://watched"})
        update = watcher.next()
        assert update["method"] == "notifications/resources/updated"
        assert update["params"] == {"uri": "test://watched", "_meta": {SUBSCRIPTION_ID: 11}}
        with pytest.raises(queue.Empty):
            watcher.next(timeout=0.5)
    finally:
        watcher.close()


def test_every_open_listen_gets_its_own_tag(served: tuple[MCPServer[Any], str]) -> None:
    _, url = served
    first, second = _Listen(url, "a", {"toolsListChanged": True}), _Listen(url, "b", {"toolsListChanged": True})
    try:
        first.next()
        second.next()
        _call(url, 2, "change_tools")
        assert first.next()["params"]["_meta"][SUBSCRIPTION_ID] == "a"
        assert second.next()["params"]["_meta"][SUBSCRIPTION_ID] == "b"
    finally:
        first.close()
        second.close()


def test_publishing_without_listeners_is_a_no_op(served: tuple[MCPServer[Any], str]) -> None:
    _, url = served
    answer = _call(url, 1, "change_tools")
    assert answer["result"]["content"] == [{"type": "text", "text": "done"}]


def test_server_shutdown_ends_listens_with_a_complete_result(served: tuple[MCPServer[Any], str]) -> None:
    mcp, url = served
    listen = _Listen(url, 5, {"toolsListChanged": True})
    try:
        listen.next()
        mcp.close()
        final = listen.next()
        assert final == {"jsonrpc": "2.0", "id": 5,
                         "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 5}}}
    finally:
        listen.close()


def test_listen_needs_the_2026_metadata(served: tuple[MCPServer[Any], str]) -> None:
    _, url = served
    response = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                                        "params": {"notifications": {"toolsListChanged": True}}},
                             headers={"Content-Type": "application/json",
                                      "Accept": "application/json, text/event-stream",
                                      "MCP-Protocol-Version": VERSION, "Mcp-Method": "subscriptions/listen"},
                             timeout=WAIT)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


def test_a_json_only_endpoint_refuses_listens_instead_of_hanging() -> None:
    mcp = _server()
    app = mcp.wsgi_app(json_response=True)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/mcp"
        response = _post(url, 1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        assert response.status_code == 400
        assert response.json() == {"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32600, "message": "subscriptions/listen answers with an SSE stream; this endpoint answers JSON only"}}
    finally:
        httpd.shutdown()
        thread.join(WAIT)
        app.close()


def test_a_list_change_reaches_the_listens_and_a_resource_update_a_legacy_subscriber(
        served: tuple[MCPServer[Any], str]) -> None:
    """``ctx.notify_tools_changed()`` reaches a 2026-07-28 listen and no legacy client, as officially;
    a legacy client hears a resource update for a URI it subscribed to, and only for that one."""
    mcp, url = served
    heard: queue.Queue[str] = queue.Queue()

    def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str):
            heard.put(method)

    listen = _Listen(url, "L-both", {"toolsListChanged": True})
    try:
        assert listen.next()["method"] == "notifications/subscriptions/acknowledged"
        with Client(mcp, mode="legacy", message_handler=on_message) as legacy:
            legacy.call_tool("change_tools", {})
            assert listen.next()["method"] == "notifications/tools/list_changed"
            legacy.call_tool("touch", {"uri": "note://a"})
            legacy.subscribe_resource("note://b")
            legacy.call_tool("touch", {"uri": "note://b"})
            assert heard.get(timeout=WAIT) == "notifications/resources/updated"  # the first it heard
            assert heard.empty()
    finally:
        listen.close()
