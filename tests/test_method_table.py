"""The method table (``minimcp.types.methods``) is the one source: what a row says is what the wire does.

Each test reads a column and checks it against a real server over HTTP (both eras), or against the
official SDK's own registry for the facts the protocol fixes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, get_args

import mcp_types.methods as official
import pytest

from conftest import (
    LEGACY,
    MODERN,
    LegacySession,
    final_message,
    initialize_params,
    legacy_handshake,
    modern_headers,
    modern_post,
    modern_rpc,
    request_message,
)
from minimcp.server import MCPServer
from minimcp.server.caching import CacheHint
from minimcp.types import HEADER_MISMATCH, METHOD_NOT_FOUND
from minimcp.types.methods import (
    CACHEABLE_METHODS,
    INPUT_REQUIRED_METHODS,
    METHODS,
    NOTIFICATIONS,
    SPEC_CLIENT_METHODS,
    SPEC_CLIENT_NOTIFICATION_METHODS,
    CacheableMethod,
)

#: A request of each row that its handler accepts (a row without one here fails the first test).
PARAMS: dict[str, dict[str, Any]] = {
    "initialize": initialize_params(),
    "ping": {},
    "server/discover": {},
    "tools/list": {},
    "tools/call": {"name": "echo", "arguments": {"text": "hi"}},
    "resources/list": {},
    "resources/templates/list": {},
    "resources/read": {"uri": "data://note"},
    "resources/subscribe": {"uri": "data://note"},
    "resources/unsubscribe": {"uri": "data://note"},
    "prompts/list": {},
    "prompts/get": {"name": "greet"},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": ""}},
    "subscriptions/listen": {"filter": {"toolsListChanged": True}},
    "logging/setLevel": {"level": "info"},
    "tasks/get": {"taskId": "no-such-task"},
    "tasks/update": {"taskId": "no-such-task", "inputResponses": {}},
    "tasks/cancel": {"taskId": "no-such-task"},
}
HINT = CacheHint(ttl_ms=5_000, scope="public")


class Table:
    """A server that serves every row, with one worker the ``hold`` tool can keep busy."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.holding = threading.Event()
        self.mcp = MCPServer("table", cache_hints={method: HINT for method in CACHEABLE_METHODS},
                             max_workers=1, max_calls_per_principal=1)

        @self.mcp.tool()
        def echo(text: str) -> str:
            return text

        @self.mcp.tool()
        def hold() -> str:
            self.holding.set()
            self.release.wait(10)
            return "released"

        @self.mcp.resource("data://note")
        def note() -> str:
            return "a note"

        @self.mcp.prompt()
        def greet(who: str = "you") -> str:
            return f"Hello {who}"

        @self.mcp.completion()
        def complete(ref: Any, argument: Any, context: Any) -> None:
            return None


@pytest.fixture
def table(serve_http: Any) -> Iterator[tuple[Table, str]]:
    served = Table()
    yield served, serve_http(served.mcp)
    served.release.set()


def _modern(url: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return modern_post(url, method, PARAMS[method] if params is None else params)[0].json()


def _legacy(session: LegacySession, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message = request_message(method, PARAMS[method] if params is None else params)
    return final_message(session.post(message), message["id"])


def test_the_rows_are_the_protocols_methods() -> None:
    """The facts the protocol fixes agree with the official SDK's registry, row by row."""
    assert set(PARAMS) == set(METHODS)
    assert SPEC_CLIENT_METHODS == official.SPEC_CLIENT_METHODS
    assert SPEC_CLIENT_NOTIFICATION_METHODS == official.SPEC_CLIENT_NOTIFICATION_METHODS == set(NOTIFICATIONS)
    assert CACHEABLE_METHODS == official.CACHEABLE_METHODS == set(get_args(CacheableMethod))
    assert INPUT_REQUIRED_METHODS == official.INPUT_REQUIRED_METHODS
    for table, surface in ((METHODS, official.CLIENT_REQUESTS), (NOTIFICATIONS, official.CLIENT_NOTIFICATIONS)):
        for row in table.values():
            if row.extension is None:
                assert ("legacy" in row.eras) == ((row.name, LEGACY) in surface), row.name
                assert ("modern" in row.eras) == ((row.name, MODERN) in surface), row.name


def test_a_method_is_served_in_the_eras_its_row_names(table: tuple[Table, str]) -> None:
    """Over real HTTP each request row is answered, or refused as unknown (-32601), as its ``eras``
    say; a name with no row is unknown in both eras."""
    _, url = table
    session = legacy_handshake(url)
    for row in METHODS.values():
        if row.stream:
            continue  # an open stream never ends on its own; tests/test_subscriptions.py reads it
        modern = _modern(url, row.name)
        assert (modern.get("error", {}).get("code") == METHOD_NOT_FOUND) != ("modern" in row.eras), (row.name, modern)
        if "legacy" in row.eras:
            legacy = _legacy(session, row.name)
            assert legacy.get("error", {}).get("code") != METHOD_NOT_FOUND, (row.name, legacy)
    assert _modern(url, "tools/frobnicate", {})["error"]["code"] == METHOD_NOT_FOUND
    assert _legacy(session, "tools/frobnicate", {})["error"]["code"] == METHOD_NOT_FOUND


def test_cacheable_rows_carry_the_servers_hints(table: tuple[Table, str]) -> None:
    """The server's ``cache_hints`` reach exactly the cacheable rows' results; any other key is refused."""
    _, url = table
    for row in METHODS.values():
        if row.cacheable:
            result = modern_rpc(url, row.name, PARAMS[row.name])["result"]
            assert (result["ttlMs"], result["cacheScope"]) == (5_000, "public"), row.name
    with pytest.raises(ValueError, match="cacheable methods"):
        MCPServer("wrong", cache_hints={"prompts/get": HINT})  # type: ignore[dict-item]


def test_only_worker_rows_wait_for_a_worker(table: tuple[Table, str]) -> None:
    """With the one worker (and the caller's one call) taken, a worker row is refused and every
    inline row still answers."""
    served, url = table
    holder = threading.Thread(target=modern_rpc, args=(url, "tools/call", {"name": "hold", "arguments": {}}))
    holder.start()
    try:
        assert served.holding.wait(10)
        for row in METHODS.values():
            if "modern" not in row.eras or row.stream:
                continue
            answer = _modern(url, row.name)
            refused = answer.get("error", {}).get("message", "").startswith("Too many calls running")
            assert refused == row.worker, (row.name, answer)
    finally:
        served.release.set()
        holder.join(10)


def test_the_target_column_drives_the_mcp_name_check(table: tuple[Table, str]) -> None:
    """A row with a ``target`` needs ``Mcp-Name`` to repeat it; a row without one ignores the header."""
    _, url = table
    for row in METHODS.values():
        if "modern" not in row.eras or row.stream:
            continue
        params = PARAMS[row.name]
        headers = {**modern_headers(row.name, params), "Mcp-Name": "something-else"}
        answer = modern_post(url, row.name, params, headers=headers)[0].json()
        mismatched = answer.get("error", {}).get("code") == HEADER_MISMATCH
        assert mismatched == (row.target is not None), (row.name, answer)
        if row.target is not None:
            assert f"params.{row.target}" in answer["error"]["message"]
