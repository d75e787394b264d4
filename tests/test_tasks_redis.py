"""Tasks shared through a real redis-server: the store's rules, and several real server processes
(``servers/redis_tasks_server.py``) answering for each other's tasks, every request sent to the
next process on a new connection."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
import redis

from conftest import RedisServer, modern_rpc, server_process, wait_for
from minimcp.server.tasks import InMemoryTaskStore, TaskExpired, TaskLimitReached, TaskNotFound
from minimcp.server.tasks import TaskStore, TaskStoreUnavailable
from minimcp.server.core.rounds import digest
from minimcp.server.tasks.redis_channel import RedisTaskChannel
from minimcp.server.tasks.redis_store import RedisTaskStore
from test_tasks_server import TASKS, WAIT, WITH_ELICITATION, Listen, build, created, poll, task_rpc, terminal
from test_tasks_server import call as call_tool
from test_tasks_store import record

SERVER = Path(__file__).parent / "servers" / "redis_tasks_server.py"
NOT_FOUND = "Failed to retrieve task: Task not found"
#: What the default store's keys start with: its prefix, then its hash tag (the prefix's digest), so
#: that an ACL user granted ``~minimcp:tasks:*`` reaches them and a cluster keeps them in one slot.
KEYS = "minimcp:tasks:{70d2d039}"


@pytest.fixture(scope="module")
def redis_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This module's redis-server, nothing persisted."""
    with RedisServer(tmp_path_factory.mktemp("redis"), persistent=False) as server:
        yield str(server.socket)


@pytest.fixture
def client(redis_socket: str) -> Iterator[redis.Redis]:
    connection = redis.Redis(unix_socket_path=redis_socket, socket_timeout=10)
    connection.flushall()
    yield connection
    connection.close()


# --- the store's rules, against both stores --------------------------------------------------------
@pytest.fixture(params=["memory", "redis", "redis, decoded responses", "redis, RESP3"])
def make_store(request: pytest.FixtureRequest) -> Iterator[Callable[..., TaskStore]]:
    """A store of either kind with the given options (the Redis one on this module's server, through
    a client answering bytes or, with ``decode_responses``, strings, or speaking RESP3)."""
    if request.param == "memory":
        yield InMemoryTaskStore
        return
    request.getfixturevalue("client")  # an empty Redis
    connection = redis.Redis(unix_socket_path=request.getfixturevalue("redis_socket"), socket_timeout=10,
                             decode_responses=request.param.endswith("decoded responses"),
                             protocol=3 if request.param.endswith("RESP3") else 2)
    yield lambda **options: RedisTaskStore(connection, **options)
    connection.close()


def test_a_record_comes_back_as_it_was_stored_and_unknown_ids_are_not_found(make_store: Any) -> None:
    store = make_store()
    kept = record("a", owner=None)
    store.create(kept)
    assert store.get("a") == kept
    with pytest.raises(TaskNotFound) as unknown:
        store.get("b")
    assert not isinstance(unknown.value, TaskExpired)
    assert store.update("b", lambda r: r) is None
    assert store.update("a", lambda r: None) is None and store.get("a") == kept
    done = store.update("a", lambda r: r.changed(status="completed", result={"content": []}, runner="p1"))
    assert done is not None and store.get("a") == done and done.runner == "p1"


def test_the_total_bound_holds_and_expired_tasks_free_their_place(make_store: Any) -> None:
    now = [time.time()]
    store = make_store(max_tasks=2, clock=lambda: now[0])
    store.create(record("a", ttl=10, now=now[0]))
    store.create(record("b", owner="bob", ttl=20, now=now[0]))
    with pytest.raises(TaskLimitReached, match="maximum of 2"):
        store.create(record("c", now=now[0]))
    now[0] += 15
    store.create(record("c", now=now[0]))


def test_expiry_is_told_with_the_owner(make_store: Any) -> None:
    now = [time.time()]
    store = make_store(clock=lambda: now[0])
    store.create(record("a", owner="alice", ttl=10, now=now[0]))
    now[0] += 11
    with pytest.raises(TaskExpired) as expired:
        store.get("a")
    assert expired.value.owner == "alice"
    assert store.update("a", lambda r: r.changed(status="completed")) is None


def test_no_update_is_lost_when_writers_race(make_store: Any) -> None:
    """Each writer adds answers of its own to the same record; every one of them must survive."""
    store = make_store()
    store.create(record("a"))
    start = threading.Barrier(4)

    def answer_all(writer: int) -> None:
        start.wait()
        for n in range(50):
            key = f"{writer}.{n}"
            store.update("a", lambda r, key=key: r.changed(answers={**r.answers, key: {"d": "", "r": {}}}))

    writers = [threading.Thread(target=answer_all, args=(writer,)) for writer in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
    assert sorted(store.get("a").answers) == sorted(f"{w}.{n}" for w in range(4) for n in range(50))


# --- the Redis store's own rules -----------------------------------------------------------------------
def test_a_finished_task_counts_against_its_owner_until_it_expires(client: redis.Redis) -> None:
    now = [time.time()]
    store = RedisTaskStore(client, max_tasks_per_owner=1, clock=lambda: now[0])
    store.create(record("a", ttl=10, now=now[0]))
    store.update("a", lambda r: r.changed(status="completed", result={"content": []}))
    with pytest.raises(TaskLimitReached, match="limit 1"):
        store.create(record("b", now=now[0]))
    store.create(record("bob-1", owner="bob", now=now[0]))  # another owner has an allowance of its own
    store.create(record("stdio-1", owner=None, now=now[0]))  # no owner (one-client transport): the total only
    store.create(record("stdio-2", owner=None, now=now[0]))
    now[0] += 11
    store.create(record("b", now=now[0]))
    assert len(store) == 4  # bob's, the two without an owner and b; a has expired


def test_concurrent_creates_on_several_connections_never_pass_the_bound(redis_socket: str) -> None:
    accepted: list[str] = []
    start = threading.Barrier(6)

    def create(worker: int) -> None:
        store = RedisTaskStore(redis.Redis(unix_socket_path=redis_socket, socket_timeout=10), max_tasks_per_owner=40)
        start.wait()
        for n in range(20):
            try:
                store.create(record(f"{worker}-{n}"))
                accepted.append(f"{worker}-{n}")
            except TaskLimitReached:
                continue
        store.client.close()

    redis.Redis(unix_socket_path=redis_socket).flushall()
    threads = [threading.Thread(target=create, args=(worker,)) for worker in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(accepted) == 40


def test_redis_lets_go_of_expired_keys_and_remembers_the_owner_for_keep_expired(client: redis.Redis) -> None:
    remembering, forgetting = RedisTaskStore(client), RedisTaskStore(client, keep_expired=0)
    remembering.create(record("a", owner="alice", ttl=0.05))
    forgetting.create(record("b", owner="alice", ttl=0.05))
    gone = (f"{KEYS}:task:a", f"{KEYS}:task:b", f"{KEYS}:gone:b")
    assert wait_for(lambda: not client.exists(*gone), WAIT), "Redis kept the expired keys"
    with pytest.raises(TaskExpired) as expired:  # the record is gone, its owner is still remembered
        remembering.get("a")
    assert expired.value.owner == "alice"
    with pytest.raises(TaskNotFound) as forgotten:  # past keep_expired, only "not found" is left
        forgetting.get("b")
    assert not isinstance(forgotten.value, TaskExpired)


def test_a_redis_that_does_not_answer_is_unavailable_not_not_found(tmp_path: Path) -> None:
    store = RedisTaskStore(redis.Redis(unix_socket_path=str(tmp_path / "nobody.sock"), socket_timeout=2))
    for attempt in (lambda: store.get("a"), lambda: store.create(record("a")),
                    lambda: store.update("a", lambda r: r)):
        with pytest.raises(TaskStoreUnavailable, match="unavailable"):
            attempt()


def test_a_record_written_by_a_newer_version_is_read_without_its_new_fields(client: redis.Redis) -> None:
    store = RedisTaskStore(client)
    store.create(record("a"))
    newer = {**json.loads(client.get(f"{KEYS}:task:a")), "priority": "high"}
    client.set(f"{KEYS}:task:a", json.dumps(newer), keepttl=True)
    assert store.get("a") == record("a", now=newer["created_at"])


def test_ids_are_never_reused_over_a_live_task(client: redis.Redis) -> None:
    store = RedisTaskStore(client)
    store.create(record("a"))
    with pytest.raises(ValueError, match="exists already"):
        store.create(record("a"))


# --- several processes --------------------------------------------------------------------------------
class Processes:
    """Server processes sharing one Redis; ``url()`` is the next one's endpoint, round-robin."""

    def __init__(self, servers: list[Any]) -> None:
        self.servers = servers
        self.urls = [server.base + "/mcp" for server in servers]
        self._next = itertools.cycle(range(len(servers)))

    def url(self) -> str:
        return self.urls[next(self._next)]


@contextlib.contextmanager
def processes(redis_socket: str, count: int, heartbeat: float = 10.0) -> Iterator[Processes]:
    path = os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "MINIMCP_TEST_REDIS": redis_socket, "MINIMCP_TEST_HEARTBEAT": str(heartbeat),
           "PYTHONPATH": path}
    with contextlib.ExitStack() as stack:
        yield Processes([stack.enter_context(server_process([sys.executable, str(SERVER)], env))
                         for _ in range(count)])


@pytest.fixture
def three(redis_socket: str, client: redis.Redis) -> Iterator[Processes]:
    with processes(redis_socket, 3) as started:
        yield started


@pytest.fixture(params=["3 processes, round-robin", "gunicorn -w 4", "gunicorn --preload -w 4"])
def spread(request: pytest.FixtureRequest, redis_socket: str, client: redis.Redis) -> Iterator[Processes]:
    """Three processes each taking the next request in turn, or one gunicorn of four workers (as
    users run it) among which the kernel spreads the connections, one per request; with
    ``--preload`` the workers are forks of one process that built the server before forking."""
    if request.param.startswith("3"):
        yield request.getfixturevalue("three")
        return
    env = {**os.environ, "MINIMCP_TEST_REDIS": redis_socket, "PYTHONPATH": str(Path(__file__).parents[1])}
    preload = ["--preload"] if "--preload" in request.param else []
    command = [str(Path(sys.executable).with_name("gunicorn")), *preload, "-w", "4", "-k", "gthread",
               "--threads", "4", "-b", "127.0.0.1:0", "--no-control-socket", "redis_tasks_wsgi:app"]
    with server_process(command, env, cwd=SERVER.parent) as gunicorn:
        yield Processes([gunicorn])


def poll_around(servers: Processes, task_id: str, until: Callable[[dict[str, Any]], bool],
                capabilities: dict[str, Any] = TASKS) -> dict[str, Any]:
    """``tasks/get`` on the next process each time until ``until`` holds (bounded); any error fails."""
    pause = threading.Event()
    for _ in range(int(3 * WAIT / 0.02)):
        answer = task_rpc(servers.url(), "tasks/get", task_id, capabilities)
        assert "result" in answer, answer
        if until(answer["result"]):
            return answer["result"]  # type: ignore[no-any-return]
        pause.wait(0.02)
    raise AssertionError(f"task {task_id} never reached the expected state; last: {answer}")


def test_ten_tasks_polled_on_every_process_complete_with_no_not_found(spread: Processes) -> None:
    task_ids = [created(call_tool(spread.url(), "add", {"a": n, "b": 1})) for n in range(10)]
    results = [poll_around(spread, task_id, terminal) for task_id in task_ids]
    assert [result["status"] for result in results] == ["completed"] * 10
    texts = [result["result"]["content"][0]["text"] for result in results]
    assert [text.split()[0] for text in texts] == [str(n + 1) for n in range(10)]
    if len(spread.urls) == 3:
        assert len({text.split()[-1] for text in texts}) == 3, "the bodies did not run in all three processes"


def test_a_task_whose_body_elicits_is_answered_on_another_process(spread: Processes) -> None:
    for n in range(5):
        task_id = created(call_tool(spread.url(), "confirm", {"filename": f"f{n}"}, capabilities=WITH_ELICITATION))
        waiting = poll_around(spread, task_id, lambda r: r["status"] == "input_required", WITH_ELICITATION)
        [(key, question)] = waiting["inputRequests"].items()
        assert question["params"]["message"] == f"Delete f{n}?"
        ack = task_rpc(spread.url(), "tasks/update", task_id, WITH_ELICITATION,
                       inputResponses={key: {"action": "accept", "content": {"confirm": True}}})
        assert ack["result"]["resultType"] == "complete", ack
        done = poll_around(spread, task_id, terminal, WITH_ELICITATION)
        assert done["status"] == "completed", done
        text = done["result"]["content"][0]["text"]
        assert text.startswith(f"f{n} deleted")
        # resumed here or from another process, the body ran in a request's context, never in none
        assert text.endswith(("in the context of tools/call by anyone", "in the context of tasks/update by anyone"))


def test_a_cancel_on_another_process_stops_the_body(spread: Processes, client: redis.Redis) -> None:
    for _ in range(5):
        task_id = created(call_tool(spread.url(), "endless"))
        started = client.blpop(["started"], timeout=WAIT)
        assert started is not None and started[1].decode().split()[0] == task_id
        assert task_rpc(spread.url(), "tasks/cancel", task_id)["result"]["resultType"] == "complete"
        stopped = client.blpop(["stopped"], timeout=WAIT)
        assert stopped is not None, "the body never saw ctx.cancelled"
        assert stopped[1].decode() == started[1].decode()  # that body, in the process that ran it
        final = task_rpc(spread.url(), "tasks/get", task_id)["result"]
        assert final["status"] == "cancelled" and final["statusMessage"] == "Cancelled by the client"


def test_a_listen_on_one_process_hears_a_task_that_ends_on_another(three: Processes, client: redis.Redis) -> None:
    first, second = three.urls[0], three.urls[1]
    task_id = created(call_tool(first, "gated"))
    listen = Listen(second, {"taskIds": [task_id]})
    try:
        ack = listen.next()
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        client.rpush(f"release:{task_id}", "go")
        update = listen.next()
        assert update["method"] == "notifications/tasks"
        assert update["params"]["taskId"] == task_id and update["params"]["status"] == "completed"
        assert update["params"]["result"]["content"][0]["text"] == "released"
    finally:
        listen.close()


def test_the_task_of_a_killed_process_fails_after_its_heartbeat(redis_socket: str, client: redis.Redis) -> None:
    with processes(redis_socket, 2, heartbeat=1.0) as two:
        doomed, survivor = two.urls
        task_id = created(call_tool(doomed, "endless"))
        assert client.blpop(["started"], timeout=WAIT) is not None
        two.servers[0].process.kill()
        two.servers[0].process.wait(10)
        failed = poll_around(Processes([two.servers[1]]), task_id, terminal)
        assert failed["status"] == "failed"
        assert failed["error"]["code"] == -32603
        assert "stopped (no heartbeat within 1 s)" in failed["error"]["message"]
        assert survivor and task_rpc(survivor, "tasks/get", task_id)["result"]["status"] == "failed"


def test_another_principal_hears_not_found_on_every_process(three: Processes) -> None:
    alice, bob = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    task_id = created(modern_rpc(three.url(), "tools/call", {"name": "endless", "arguments": {}}, capabilities=TASKS,
                                 headers=alice))
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        for _ in three.urls:
            error = modern_rpc(three.url(), method, {"taskId": task_id, "inputResponses": {}}, capabilities=TASKS,
                               headers=bob)["error"]
            assert error == {"code": -32602, "message": NOT_FOUND}
    for _ in three.urls:
        own = modern_rpc(three.url(), "tasks/get", {"taskId": task_id}, capabilities=TASKS, headers=alice)["result"]
        assert own["status"] == "working"
    modern_rpc(three.url(), "tasks/cancel", {"taskId": task_id}, capabilities=TASKS, headers=alice)


def test_redis_stopped_is_a_retry_and_restarted_it_serves_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    server = RedisServer(tmp_path_factory.mktemp("restart"))
    with server, processes(str(server.socket), 2, heartbeat=60.0) as two:
        runner, other = two.urls
        task_id = created(call_tool(runner, "endless"))
        with redis.Redis(unix_socket_path=str(server.socket), socket_timeout=10) as watcher:
            assert watcher.blpop(["started"], timeout=WAIT) is not None
        server.stop()
        for answer in (task_rpc(other, "tasks/get", task_id), call_tool(other, "add", {"a": 1, "b": 1})):
            assert answer["error"]["code"] == -32603, answer  # never "Task not found": the client retries
            assert "task store (Redis) is unavailable" in answer["error"]["message"]
            assert answer["error"]["message"].endswith("; try again")
        server.start()  # the same data (append-only file): the processes reconnect on their own
        assert task_rpc(other, "tasks/get", task_id)["result"]["status"] == "working"
        assert task_rpc(other, "tasks/cancel", task_id)["result"]["resultType"] == "complete"
        with redis.Redis(unix_socket_path=str(server.socket), socket_timeout=30) as watcher:
            stopped = watcher.blpop(["stopped"], timeout=3 * WAIT)
        assert stopped is not None and stopped[1].decode().split()[0] == task_id, "the body never stopped"


# --- one process on the shared channel: what the heartbeat's catch-up and close do ----------------------
@pytest.fixture
def on_redis(client: redis.Redis, serve_http: Callable[..., str]) -> Iterator[tuple[str, RedisTaskStore, dict[str, Any]]]:
    """An in-process server (``test_tasks_server.build``) on the Redis store and channel, beating every 0.1 s."""
    store = RedisTaskStore(client)
    mcp, seen = build(task_store=store, task_channel=RedisTaskChannel(client, heartbeat=0.3))
    yield serve_http(mcp), store, seen
    mcp.close()


def test_a_cancel_whose_message_was_lost_still_stops_the_body(on_redis: Any) -> None:
    url, store, seen = on_redis
    task_id = created(call_tool(url, "endless"))
    assert seen["running"].wait(WAIT)
    store.update(task_id, lambda r: r.changed(status="cancelled"))  # another process cancelled; no word came
    assert seen["stopped"].wait(WAIT), "the holder never read the cancelled record"


def test_a_resumption_whose_message_was_lost_still_runs_the_body(on_redis: Any) -> None:
    url, store, seen = on_redis
    task_id = created(call_tool(url, "confirm", {"filename": "x"}, capabilities=WITH_ELICITATION))
    waiting = poll(url, task_id, lambda r: r["status"] == "input_required", WITH_ELICITATION)
    [(key, question)] = waiting["inputRequests"].items()
    answer = {"d": digest(question), "r": {"action": "accept", "content": {"confirm": True}}}
    store.update(task_id, lambda r: r.changed(status="working", input_requests={}, answers={key: answer}))
    done = poll(url, task_id, terminal, WITH_ELICITATION)
    assert done["result"]["content"][0]["text"] == "deleted" and seen["runs"] == 2


def test_close_stops_the_listener_and_withdraws_the_heartbeat(client: redis.Redis,
                                                              serve_http: Callable[..., str]) -> None:
    channel = RedisTaskChannel(client, heartbeat=5.0)
    mcp, _ = build(task_store=RedisTaskStore(client), task_channel=channel)
    created(call_tool(serve_http(mcp), "add", {"a": 1, "b": 1}))
    alive = f"{KEYS}:alive:" + channel.process_id
    assert client.exists(alive) and channel.alive(channel.process_id)
    assert any(thread.name == "minimcp-task-channel" for thread in threading.enumerate())
    mcp.close()
    assert not any(thread.name == "minimcp-task-channel" for thread in threading.enumerate())
    assert not client.exists(alive)
