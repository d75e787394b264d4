"""A shared backend's faults, named for what they are, on real redis-servers and real server processes.

- A configuration Redis refuses (a wrong password, an ACL user's, one without a permission the
  server needs, TLS that cannot start, a cluster node) stops the server where it is built, with one
  line naming the cause and the fix: ``MCPServer(backend=...)`` (through ``RedisBackend.check``),
  so a server program exits before it listens.
- Met later (the password changed while the server runs), it is answered 500 with the cause, never
  "retry shortly", and logged once however many requests meet it.
- A Redis that is only away (stopped) is answered 503 with ``Retry-After`` on every path of both
  eras, a 2026-07-28 round that must seal its requestState included; the server serves again when
  Redis is back.
- A Redis that lost its data: a legacy session's next request is told its record is gone from the
  shared backend (404), and minimcp's client starts a new session.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_support import SERVERS, programs, server_env
from conftest import LEGACY, LegacySession, RedisServer, legacy_handshake, modern_post, request_message
from pydantic import BaseModel
from test_tasks_server import call, created, poll, terminal

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.backends import BackendMisconfigured, RedisBackend
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult

ELICITING = {"elicitation": {}}
PASSWORD = "right-password"
CREDENTIALS = "refused the server's credentials"
#: What a client reads while Redis is away, and what it reads when Redis refuses the server.
UNREACHABLE = "The server's shared state is unreachable; retry shortly"
REFUSES = "The server's shared state refuses the server's configuration (its credentials were refused)"


@pytest.fixture
def redis_servers() -> Iterator[Callable[..., RedisServer]]:
    """Start ``RedisServer(directory, **options)``s of the test's own, each in a short directory
    under /tmp (a unix socket's path is limited to about 100 bytes); all stopped afterwards."""
    started: list[RedisServer] = []

    def start(**options: Any) -> RedisServer:
        server = RedisServer(Path(tempfile.mkdtemp(prefix="minimcp-redis-", dir="/tmp")), **options)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()
        shutil.rmtree(server.socket.parent, ignore_errors=True)


class Ok(BaseModel):
    ok: bool


def _agree(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


def _refused_at_start(backend: str) -> str:
    with pytest.raises(BackendMisconfigured) as wrong:
        MCPServer("Faults", backend=backend)
    return str(wrong.value)


# --- refused at start-up ----------------------------------------------------------------------------
def test_a_wrong_or_missing_password_stops_the_server_where_it_is_built(redis_servers: Callable[..., RedisServer]) -> None:
    redis = redis_servers(password=PASSWORD)
    wrong = _refused_at_start(f"unix://{redis.socket}?password=wrong")
    assert CREDENTIALS in wrong
    assert "give the right password" in wrong and f"unix://{redis.socket}" in wrong
    assert CREDENTIALS in _refused_at_start(f"unix://{redis.socket}")  # NOAUTH
    assert MCPServer("Faults", backend=redis.url).backend.shared  # the right one passes


def test_a_server_program_given_a_wrong_password_exits_before_it_listens_naming_the_cause(
        redis_servers: Callable[..., RedisServer]) -> None:
    redis = redis_servers(password=PASSWORD)
    ran = subprocess.run([sys.executable, str(SERVERS / "shared_server.py")], capture_output=True, text=True,
                         timeout=60, env=server_env(f"unix://{redis.socket}?password=wrong"))
    assert ran.returncode != 0
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("minimcp.server.core.faults.BackendMisconfigured: Redis at unix://"), ran.stderr
    assert CREDENTIALS in last and "http://127.0.0.1" not in ran.stdout + ran.stderr


def test_an_acl_user_with_a_wrong_password_or_without_a_permission_is_refused_naming_what_to_grant(
        redis_servers: Callable[..., RedisServer]) -> None:
    redis = redis_servers(password=PASSWORD)
    admin = redis.client()
    admin.acl_setuser("app", enabled=True, passwords=["+app-password"], keys=["*"], channels=["*"],
                      commands=["+@all"])
    admin.acl_setuser("narrow", enabled=True, passwords=["+narrow-password"], keys=["other:*"], channels=["*"],
                      commands=["+@all"])
    admin.close()
    assert CREDENTIALS in _refused_at_start(f"unix://app:wrong@{redis.socket}")
    assert MCPServer("Faults", backend=f"unix://app:app-password@{redis.socket}").backend.shared
    narrow = _refused_at_start(f"unix://narrow:narrow-password@{redis.socket}")
    assert "does not permit the server's ACL user what it needs" in narrow
    assert "~minimcp:Faults:*" in narrow and "+@scripting" in narrow


def test_an_acl_user_granted_only_the_prefix_as_the_refusal_says_serves_sessions_and_tasks(
        redis_servers: Callable[..., RedisServer], serve_http: Callable[..., str]) -> None:
    redis = redis_servers(password=PASSWORD, tcp=True)
    admin = redis.client()
    admin.acl_setuser("scoped", enabled=True, passwords=["+scoped-password"], keys=["minimcp:Scoped:*"],
                      channels=["minimcp:Scoped:*"],
                      commands=["+@read", "+@write", "+@scripting", "+@pubsub", "+@transaction", "+@connection"])
    admin.close()
    where = f"127.0.0.1:{redis.port}/0"
    assert CREDENTIALS in _refused_at_start(f"redis://scoped:wrong@{where}")
    mcp = MCPServer("Scoped", backend=f"redis://scoped:scoped-password@{where}")

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action}"

    @mcp.tool(task=True)
    def add(a: int, b: int) -> int:
        return a + b

    url = serve_http(mcp)
    with Client(streamable_http_client(url), mode="legacy", elicitation_callback=_agree) as client:
        assert client.call_tool("confirm", {"door": "front"}).content[0].text == "front: accept"
    done = poll(url, created(call(url, "add", {"a": 2, "b": 3})), terminal)
    assert done["status"] == "completed" and done["result"]["structuredContent"] == {"result": 5}
    mcp.close()
    mcp.backend.close()


def test_tls_that_cannot_start_is_refused_with_a_tls_message(redis_servers: Callable[..., RedisServer],
                                                             tmp_path: Path) -> None:
    plain = redis_servers(tcp=True)
    fast = "socket_connect_timeout=0.5"
    not_tls = _refused_at_start(f"rediss://127.0.0.1:{plain.port}/0?{fast}")
    assert f"Redis at rediss://127.0.0.1:{plain.port}/0 speaks plain Redis, not TLS" in not_tls
    missing = tmp_path / "missing-ca.pem"
    no_ca = _refused_at_start(f"rediss://127.0.0.1:{plain.port}/0?ssl_ca_certs={missing}&{fast}")
    assert f"TLS with Redis at rediss://127.0.0.1:{plain.port}/0 cannot start: ssl_ca_certs={missing}" in no_ca


def test_a_cluster_node_is_refused_at_start_up(redis_servers: Callable[..., RedisServer]) -> None:
    node = redis_servers(options=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"])
    assert "is a node of a Redis Cluster" in _refused_at_start(node.url)


def test_a_redis_not_up_yet_is_no_misconfiguration(redis_servers: Callable[..., RedisServer],
                                                    caplog: pytest.LogCaptureFixture) -> None:
    redis = redis_servers()
    redis.stop()
    backend = RedisBackend(redis.url)
    backend.check()  # a server may start before its Redis
    assert "does not answer" in caplog.text and "answers 503 with Retry-After until it does" in caplog.text
    backend.close()


# --- met while serving --------------------------------------------------------------------------------
def _first_round(url: str) -> Any:
    return modern_post(url, "tools/call", {"name": "confirm", "arguments": {"door": "front"}}, capabilities=ELICITING)[0]


def _legacy_list(session: LegacySession) -> Any:
    return session.post(request_message("tools/list"))


def test_a_password_changed_while_serving_answers_500_naming_it_and_logs_it_once(
        redis_servers: Callable[..., RedisServer]) -> None:
    redis = redis_servers(password=PASSWORD)
    with programs(1, redis.url) as (server,):
        url = server.base + "/mcp"
        session = legacy_handshake(url)
        admin = redis.client()
        admin.config_set("requirepass", "changed")
        admin.client_kill_filter(_type="normal", skipme=True)
        admin.client_kill_filter(_type="pubsub")
        admin.close()
        for _ in range(2):
            legacy = _legacy_list(session)
            assert legacy.status_code == 500 and "Retry-After" not in legacy.headers
            assert legacy.json()["error"]["message"].startswith(REFUSES)
            modern = _first_round(url)
            assert modern.status_code == 500 and modern.json()["error"]["message"].startswith(REFUSES)
    assert server.output().count(CREDENTIALS) == 1


def _second_round(url: str, state: str) -> Any:
    params = {"name": "confirm", "arguments": {"door": "front"}, "requestState": state,
              "inputResponses": {"elicit:0": {"action": "accept", "content": {"ok": True}}}}
    return modern_post(url, "tools/call", params, capabilities=ELICITING)[0]


def test_redis_stopped_mid_run_answers_503_on_both_eras_and_the_server_serves_again(
        redis_servers: Callable[..., RedisServer]) -> None:
    redis = redis_servers()
    with programs(2, redis.url) as (server, fresh):
        url = server.base + "/mcp"
        session = legacy_handshake(url)
        state = _first_round(url).json()["result"]["requestState"]
        redis.stop()
        # A legacy request, a round that must seal its state, and one whose state a process that
        # never read the key ring must open.
        for down in (_legacy_list(session), _first_round(url), _second_round(fresh.base + "/mcp", state)):
            assert down.status_code == 503 and down.headers["Retry-After"] == "1", down.text
            assert down.json()["error"]["message"] == UNREACHABLE
        redis.start()
        assert _legacy_list(session).status_code == 200
        back = _first_round(url)
        assert back.status_code == 200 and back.json()["result"]["resultType"] == "input_required"
        assert "result" in _second_round(fresh.base + "/mcp", state).json()
    assert "answers again" in server.output()


def test_a_session_lost_with_the_backends_data_is_told_so_and_the_client_starts_anew(
        redis_servers: Callable[..., RedisServer]) -> None:
    redis = redis_servers()
    with programs(2, redis.url) as (first, second):
        session = legacy_handshake(first.base + "/mcp")
        transport = streamable_http_client(second.base + "/mcp", terminate_on_close=False)
        with Client(transport, mode="legacy") as client:
            assert client.call_tool("pid", {}).structured_content["result"] > 0
            admin = redis.client()
            admin.flushall()
            admin.close()
            for where in (first, second):  # the process holding the session, and one that never saw it
                lost = LegacySession(where.base + "/mcp", session.session_id, LEGACY).post(request_message("tools/list"))
                assert lost.status_code == 404, lost.text
                message = lost.json()["error"]["message"]
                assert "record is gone from the server's shared backend" in message and "start a new session" in message
                assert "sticky" not in message
            assert client.call_tool("pid", {}).structured_content["result"] > 0  # on a new session
