"""Key prefixes on a shared Redis: two servers on one database never share state unless they are one.

The default prefix is ``minimcp:`` and the server's name; a deployment names its own wherever it
names the backend: ``RedisBackend(prefix=...)``, the URL's ``prefix`` parameter (so Flask's
``MINIMCP_BACKEND`` and Django's ``MINIMCP["BACKEND"]`` carry it too: tests/test_shared_backend.py).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import pytest
import redis
from conftest import LegacySession, RedisServer, legacy_handshake, post, request_message

from minimcp import Client
from minimcp.server import MCPServer
from minimcp.server.backends import RedisBackend


def _served(name: str, backend: Any) -> MCPServer:
    mcp = MCPServer(name, backend=backend)

    @mcp.tool()
    def hello() -> str:
        return f"hello from {name}"

    return mcp


def _roots(redis_server: RedisServer, db: int = 0) -> set[str]:
    """What the database's keys start with, up to their kind (``minimcp:notes`` of ``minimcp:notes:s:<id>``)."""
    client = redis.Redis(unix_socket_path=str(redis_server.socket), db=db)
    try:
        return {key.decode().rsplit(":", 2)[0] for key in client.scan_iter("*") if b":s:" in key}
    finally:
        client.close()


def test_two_differently_named_servers_on_one_redis_never_serve_each_other_s_sessions(
        redis_server: RedisServer, serve_http: Callable[..., str]) -> None:
    c, d = serve_http(_served("C", redis_server.url)), serve_http(_served("D", redis_server.url))
    on_c = legacy_handshake(c)
    assert on_c.call_tool("hello")["content"][0]["text"] == "hello from C"
    elsewhere = legacy_handshake(d)  # D's own session is served by D
    assert elsewhere.call_tool("hello")["content"][0]["text"] == "hello from D"
    stolen = post(d, request_message("tools/call", {"name": "hello", "arguments": {}}),
                  session_id=on_c.session_id, protocol_version=on_c.protocol_version)
    assert stolen.status_code == 404 and stolen.json()["error"]["message"] == "Session not found"
    assert _roots(redis_server) == {"minimcp:C", "minimcp:D"}


def test_processes_of_one_server_share_its_sessions_under_its_name(redis_server: RedisServer,
                                                                    serve_http: Callable[..., str]) -> None:
    first, second = serve_http(_served("My Notes", redis_server.url)), serve_http(_served("My Notes", redis_server.url))
    session = legacy_handshake(first)
    same = LegacySession(second, session.session_id, session.protocol_version)
    assert same.call_tool("hello")["content"][0]["text"] == "hello from My Notes"
    assert _roots(redis_server) == {"minimcp:My%20Notes"}  # quoted: no name spells another's keys


def test_the_url_names_the_prefix_and_keeps_redis_py_s_own_parameters(redis_server: RedisServer,
                                                                       serve_http: Callable[..., str]) -> None:
    url = serve_http(_served("C", f"{redis_server.url}?db=3&prefix=team-a"))
    with Client(url, mode="legacy") as client:
        assert client.call_tool("hello", {}).content[0].text == "hello from C"
        assert _roots(redis_server, db=3) == {"team-a"}
        assert _roots(redis_server) == set()


def test_a_backend_object_takes_its_prefix_from_its_argument_its_url_or_its_server(
        redis_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    assert RedisBackend(redis_server.url, prefix="mine").prefix == "mine"
    assert RedisBackend(f"{redis_server.url}?prefix=mine", prefix="mine").prefix == "mine"
    assert RedisBackend(f"{redis_server.url}?prefix=team").prefix == "team"
    assert RedisBackend(redis_server.url).prefix == "minimcp"  # no server named it
    client = redis.Redis(unix_socket_path=str(redis_server.socket))
    given, explicit = RedisBackend(client), RedisBackend(client, prefix="x")
    weather = MCPServer("Weather", backend=given)
    assert weather.backend is given and given.prefix == "minimcp:Weather"
    with caplog.at_level(logging.WARNING, logger="minimcp.server.backends"):
        other = MCPServer("Other", backend=given)
    assert "one RedisBackend serves the servers 'Weather' and 'Other'" in caplog.text
    assert given.prefix == "minimcp:Weather"
    named = MCPServer("Weather", backend=explicit)
    assert explicit.prefix == "x"
    for server in (weather, other, named):
        server.close()
    with pytest.raises(ValueError, match="differ; give one"):
        RedisBackend(f"{redis_server.url}?prefix=a", prefix="b")
    with pytest.raises(ValueError, match="not empty"):
        MCPServer("C", backend=f"{redis_server.url}?prefix=")
    with pytest.raises(ValueError, match="must not be empty"):
        RedisBackend(client, prefix="")
    for backend in (given, explicit):  # the client is the test's: its backends stop before it closes
        backend.close()
    client.close()
