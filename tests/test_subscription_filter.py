"""``MCPServer(subscription_filter=...)``: who may hear a resource's updates, decided per caller.

Here a caller may follow its own notes only: the caller names itself in ``clientInfo``, and
``note://<name>/...`` belongs to ``<name>``. A listen leaves the other URIs out of what it
honours, and hears nothing of them; a legacy ``resources/subscribe`` to one is refused.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from minimcp import Client, MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.shared.subscriptions import ResourceUpdated
from minimcp.types import Implementation

WAIT = 10.0


def _owner_only(ctx: Context, uri: str) -> bool:
    caller = ctx.session.client_params.client_info.name if ctx.session.client_params else None
    return uri.startswith(f"note://{caller}/")


def _server() -> MCPServer:
    mcp = MCPServer("notes", subscription_filter=_owner_only)

    @mcp.resource("note://{owner}/{name}")
    def note(owner: str, name: str) -> str:
        return f"{owner}'s {name}"

    @mcp.tool()
    def touch(uri: str, ctx: Context) -> str:
        ctx.notify_resource_updated(uri)
        return "touched"

    return mcp


def test_a_listen_honours_only_what_the_caller_may_hear(serve_http: Callable[..., str]) -> None:
    url = serve_http(_server())
    with Client(url, mode="2026-07-28", client_info=Implementation(name="alice", version="1")) as client:
        with client.listen(resource_subscriptions=["note://alice/todo", "note://bob/diary"]) as sub:
            assert sub.honored.resource_subscriptions == ["note://alice/todo"]
            client.call_tool("touch", {"uri": "note://bob/diary"})
            client.call_tool("touch", {"uri": "note://alice/todo"})
            assert sub.next(timeout=WAIT) == ResourceUpdated(uri="note://alice/todo")


def test_a_legacy_subscribe_to_another_callers_uri_is_refused(serve_http: Callable[..., str]) -> None:
    url = serve_http(_server())
    with Client(url, mode="legacy", client_info=Implementation(name="alice", version="1")) as client:
        client.subscribe_resource("note://alice/todo")
        with pytest.raises(MCPError, match="Not allowed to subscribe to note://bob/diary") as refused:
            client.subscribe_resource("note://bob/diary")
        assert refused.value.code == -32602
