"""``backend=``: the shared state of a multi-process deployment on a real redis-server.

The processes here are real: servers of ``tests/servers/shared_server.py`` started on ports they
bind themselves, talked to by a client whose every request goes to the next process.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from pydantic import BaseModel
from cluster_support import RoundRobin, accept, gunicorns, programs
from conftest import RedisServer, modern_post

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.backends import Backend, MemoryBackend, RedisBackend, resolve_backend
from minimcp.server.lowlevel.server import Server
from minimcp.server.mcpserver import Context


# --- the seam ---------------------------------------------------------------------------------
def test_backend_takes_a_url_or_an_object_and_memory_is_the_default(redis_server: RedisServer) -> None:
    assert isinstance(MCPServer("a").backend, MemoryBackend)
    assert isinstance(Server("a").backend, MemoryBackend)
    from_url = MCPServer("a", backend=redis_server.url)
    assert isinstance(from_url.backend, RedisBackend) and from_url.backend.shared
    given = RedisBackend(redis_server.url, prefix="mine")
    assert MCPServer("a", backend=given).backend is given
    assert Server("a", backend=given).backend is given
    from_url.close()
    given.close()
    assert isinstance(resolve_backend("memory"), MemoryBackend)
    assert isinstance(MemoryBackend(), Backend)


def test_a_backend_that_is_neither_a_url_nor_a_backend_is_refused_with_what_to_give() -> None:
    with pytest.raises(ValueError, match="give a Redis URL"):
        MCPServer("a", backend="postgres://db")
    with pytest.raises(TypeError, match="takes a URL or a minimcp.server.backends.Backend"):
        MCPServer("a", backend=42)  # type: ignore[arg-type]


def test_flask_reads_the_backend_from_the_app_config(redis_server: RedisServer) -> None:
    from flask import Flask

    from minimcp.flask import MCP

    app = Flask(__name__)
    app.config["MINIMCP_BACKEND"] = redis_server.url
    mcp = MCP(app, "site", login_required=False)
    assert isinstance(mcp.backend, RedisBackend)
    assert mcp.subscriptions is mcp.backend.subscription_bus()
    mcp.close()
    assert isinstance(MCP(Flask(__name__), "plain", login_required=False).backend, MemoryBackend)


# --- requestState -----------------------------------------------------------------------------
ELICITING = {"elicitation": {}}


def _first_round(url: str) -> dict[str, Any]:
    answer = modern_post(url, "tools/call", {"name": "confirm", "arguments": {"door": "front"}},
                         capabilities=ELICITING)[0].json()
    assert answer["result"]["resultType"] == "input_required", answer
    return answer["result"]


def _second_round(url: str, state: str) -> dict[str, Any]:
    params = {"name": "confirm", "arguments": {"door": "front"}, "requestState": state,
              "inputResponses": {"elicit:0": {"action": "accept", "content": {"ok": True}}}}
    return modern_post(url, "tools/call", params, capabilities=ELICITING)[0].json()


def test_a_round_sealed_on_one_process_opens_on_another_with_no_key_configured(redis_server: RedisServer) -> None:
    with programs(2, redis_server.url) as (first, second):
        state = _first_round(first.base + "/mcp")["requestState"]
        done = _second_round(second.base + "/mcp", state)
    assert done["result"]["content"][0]["text"] == "front: accept True"


def test_a_request_state_is_single_use_with_a_backend(redis_server: RedisServer) -> None:
    """A second use, on the same process or another, gets the -32602 of any unusable state: a client
    that lost the answer to a round starts the call again from its first round."""
    with programs(2, redis_server.url) as (first, second):
        state = _first_round(first.base + "/mcp")["requestState"]
        assert "result" in _second_round(second.base + "/mcp", state)
        for url in (first.base + "/mcp", second.base + "/mcp"):
            again = _second_round(url, state)
            assert again["error"]["code"] == -32602
            assert again["error"]["message"] == "Invalid or expired requestState"
        restarted = _first_round(second.base + "/mcp")["requestState"]
        assert "result" in _second_round(first.base + "/mcp", restarted)


def test_without_a_backend_a_request_state_may_be_used_again_as_before(serve_http: Callable[..., str]) -> None:
    url = serve_http(_confirm_server())
    state = _first_round(url)["requestState"]
    assert "result" in _second_round(url, state)
    assert "result" in _second_round(url, state)


class Ok(BaseModel):
    ok: bool


def _confirm_server(backend: Any = None) -> MCPServer:
    mcp = MCPServer("Shared", backend=backend)

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"

    return mcp


def test_rotated_keys_seal_anew_and_still_open_what_the_old_key_sealed(redis_server: RedisServer,
                                                                       serve_http: Callable[..., str]) -> None:
    backend = RedisBackend(redis_server.url)
    mcp = _confirm_server(backend)
    url = serve_http(mcp)
    before = _first_round(url)["requestState"]
    keys = backend.request_state_keys()
    backend.rotate_request_state_keys()
    assert backend.request_state_keys()[1:] == keys and len(backend.request_state_keys()) == 2
    assert "result" in _second_round(url, before)
    other = _confirm_server(RedisBackend(redis_server.url))  # a process that started after the rotation
    fresh = _first_round(serve_http(other))["requestState"]
    assert "result" in _second_round(url, fresh)


def test_a_multiprocess_server_with_per_process_keys_warns_once_naming_the_fix() -> None:
    with gunicorns(1, 2, None) as (server,):
        for _ in range(3):
            _first_round(server.base + "/mcp")
        server.process.terminate()
        server.process.wait(20)
        output = server.output()
    assert output.count("each seals requestState with keys of its own") in (1, 2)  # once per worker at most
    assert 'backend="redis://host:6379/0"' in output


def test_a_modern_client_completes_elicitations_on_alternate_processes(redis_server: RedisServer) -> None:
    with programs(2, redis_server.url) as servers:
        rotating = RoundRobin([server.base for server in servers])
        with Client(streamable_http_client(servers[0].base + "/mcp", http_client=rotating),
                    elicitation_callback=accept) as client:
            texts = [client.call_tool("confirm", {"door": f"d{n}"}).content[0].text for n in range(5)]
    assert texts == [f"d{n}: accept True" for n in range(5)]
    assert len(set(rotating.sent)) == 2


def test_redis_stopped_answers_503_and_restarted_empty_gets_the_keys_back(redis_server: RedisServer) -> None:
    with programs(2, redis_server.url) as (first, second):
        sealed = _first_round(first.base + "/mcp")["requestState"]
        redis_server.stop()
        down, _ = modern_post(first.base + "/mcp", "tools/call", {
            "name": "confirm", "arguments": {"door": "front"}, "requestState": sealed,
            "inputResponses": {"elicit:0": {"action": "accept", "content": {"ok": True}}}}, capabilities=ELICITING)
        assert down.status_code == 503 and down.headers["Retry-After"] == "1"
        assert down.json()["error"] == {"code": -32603, "message": "The server's shared state is unreachable; retry shortly"}
        redis_server.start(fresh=True)  # the ring is gone: the first process to seal puts its own back
        state = _first_round(first.base + "/mcp")["requestState"]
        assert "result" in _second_round(second.base + "/mcp", state)


def _session_roots(redis_server: RedisServer) -> list[str]:
    """What each session key starts with (``minimcp:site`` of ``minimcp:site:s:<id>``), one per session."""
    import redis

    client = redis.Redis(unix_socket_path=str(redis_server.socket))
    try:
        return [key.decode().rsplit(":", 2)[0] for key in client.scan_iter("*:s:*")]
    finally:
        client.close()


#: A backend URL as a setting gives it, and the prefix its keys then have: the server's name by
#: default, else the URL's ``prefix`` parameter.
PREFIXES = pytest.mark.parametrize("query, prefix", [("", None), ("?prefix=shop", "shop")])


@PREFIXES
def test_flask_keeps_its_legacy_sessions_in_the_configured_backend(
        redis_server: RedisServer, serve_wsgi: Callable[[Any], str], query: str, prefix: str | None) -> None:
    from flask import Flask

    from minimcp.flask import MCP

    app = Flask(__name__)
    app.config["MINIMCP_BACKEND"] = redis_server.url + query
    mcp = MCP(app, "site", login_required=False)

    @mcp.tool()
    def hello() -> str:
        return "hi"

    with Client(serve_wsgi(app) + "/mcp", mode="legacy") as client:
        assert client.call_tool("hello", {}).content[0].text == "hi"
        assert _session_roots(redis_server) == [prefix or "minimcp:site"]
    mcp.close()


@PREFIXES
def test_django_reads_the_backend_from_its_minimcp_settings(redis_server: RedisServer, tmp_path: Any,
                                                             query: str, prefix: str | None) -> None:
    from host_support import start_site, stop_site

    site = start_site(tmp_path, NOTES_BACKEND=redis_server.url + query)
    try:
        with site.client("alice", "legacy") as client:
            assert client.call_tool("my_notes", {}).is_error is False
            assert _session_roots(redis_server) == [prefix or "minimcp:Notes"]
    finally:
        stop_site(site)
