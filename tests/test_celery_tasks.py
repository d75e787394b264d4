"""Task bodies on a real Celery worker (``CeleryExecutor``): a ``celery worker`` process and web
server processes (``servers/celery_tasks_server.py``) sharing a real redis-server, Celery's broker
and the task store. The bodies run in the worker's process (their results carry its pid), outlive
the web process that created them, stop when cancelled, and a question ends a run until the
answer, from a client of either era, runs the body again from the top with the recorded answer."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import queue
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import redis

from conftest import DOCS_SOURCES, LEGACY, ROOT, RedisServer, legacy_handshake, modern_rpc, next_line, require_service
from conftest import server_process, wait_for
from minimcp import Client, TaskCancelledError
from minimcp.client import ClientRequestContext
from minimcp.types import ElicitResult
from test_tasks_server import WITH_ELICITATION

SERVERS = Path(__file__).parent / "servers"
SERVER = SERVERS / "celery_tasks_server.py"
WAIT = 30.0
#: How long a worker may take to import, connect and say it is ready (a loaded machine is slow).
STARTUP = 60.0


@dataclass
class Deployment:
    redis: redis.Redis
    env: dict[str, str]
    worker: subprocess.Popen[str]
    url: str  # the long-lived web process's endpoint

    def started(self, task_id: str) -> bool:
        return task_id.encode() in self.redis.lrange("started", 0, -1)

    def stopped(self, task_id: str) -> bool:
        return task_id.encode() in self.redis.lrange("stopped", 0, -1)


def _celery_installed() -> str | None:
    return "celery" if importlib.util.find_spec("celery") is not None else None


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    """A redis-server, one ``celery worker --pool threads -c 2`` and one web process, for the module."""
    require_service(_celery_installed(), "Celery", "pip install celery")
    directory = Path(tempfile.mkdtemp(prefix="minimcp-celery-", dir="/tmp"))  # a short unix socket path
    try:
        with RedisServer(directory, persistent=False) as server:
            env = {**os.environ, "MINIMCP_TEST_REDIS": str(server.socket),
                   "PYTHONPATH": os.pathsep.join([str(ROOT), str(SERVERS), os.environ.get("PYTHONPATH", "")])}
            client = server.client()
            with _worker(env) as worker, server_process([sys.executable, str(SERVER)], env=env) as web:
                yield Deployment(client, env, worker, web.base + "/mcp")
            client.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _read(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)
    lines.put("")


@contextlib.contextmanager
def _worker(env: dict[str, str], module: str = "celery_tasks_server",
            cwd: Path = SERVERS) -> Iterator[subprocess.Popen[str]]:
    """``celery -A module worker``, once it says it is ready; stopped afterwards (its group). Its
    output is read to the end by a thread of its own, so it never blocks on a full pipe."""
    command = [sys.executable, "-m", "celery", "-A", module, "worker", "--pool", "threads",
               "--concurrency", "2", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
               "--without-heartbeat", "--hostname", f"test-{os.getpid()}@%h"]
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_read, args=(process, lines), name="test-celery-output", daemon=True)
    reader.start()
    try:
        next_line(lines, lambda line: " ready." in line, STARTUP, "line of the Celery worker saying it is ready")
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        reader.join(10)


def accepting(asked: list[str]) -> Callable[[ClientRequestContext, Any], ElicitResult]:
    def answer(context: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": True})
    return answer


# --- a body on the worker --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_task_runs_on_the_worker_and_its_result_is_fetched(deployment: Deployment, mode: str) -> None:
    with Client(deployment.url, mode=mode) as client:
        handle = client.call_tool("add", {"a": 20, "b": 22}, task=True)
        assert handle.task_id
        result = handle.result(timeout=WAIT)
    assert result.content[0].text == f"42 (pid {deployment.worker.pid})"  # the worker's process, not the web one's


def test_a_task_outlives_the_web_process_that_created_it(deployment: Deployment) -> None:
    with server_process([sys.executable, str(SERVER)], env=deployment.env) as first:
        with Client(first.base + "/mcp") as client:
            task_id = client.call_tool("gated", task=True).task_id
        assert task_id is not None
        assert wait_for(lambda: deployment.started(task_id), WAIT), "the body never started on the worker"
        first.process.kill()  # a crash: nothing of the task is handed over
        first.process.wait(10)
    with server_process([sys.executable, str(SERVER)], env=deployment.env) as second:
        with Client(second.base + "/mcp") as client:
            handle = client.task(task_id)
            assert handle.status().status == "working"  # not failed for want of the dead process's heartbeat
            deployment.redis.rpush(f"release:{task_id}", "go")
            assert handle.result(timeout=WAIT).content[0].text == f"released (pid {deployment.worker.pid})"


# --- cancellation --------------------------------------------------------------------------------
def test_cancel_stops_the_running_body_and_the_task_is_cancelled(deployment: Deployment) -> None:
    with Client(deployment.url) as client:
        handle = client.call_tool("endless", task=True)
        task_id = handle.task_id
        assert task_id is not None
        assert wait_for(lambda: deployment.started(task_id), WAIT), "the body never started on the worker"
        handle.cancel()
        assert wait_for(lambda: deployment.stopped(task_id), WAIT), "the body on the worker never saw ctx.cancelled"
        assert handle.status().status == "cancelled"
        with pytest.raises(TaskCancelledError):
            handle.result(timeout=WAIT)


def test_a_task_cancelled_while_queued_never_runs(deployment: Deployment) -> None:
    with Client(deployment.url) as client:
        busy = [client.call_tool("gated", task=True).task_id for _ in range(2)]  # both worker threads taken
        assert all(task_id is not None and wait_for(lambda t=task_id: deployment.started(t), WAIT) for task_id in busy)
        queued = client.call_tool("endless", task=True)
        queued.cancel()
        for task_id in busy:
            deployment.redis.rpush(f"release:{task_id}", "go")
        after = client.call_tool("add", {"a": 1, "b": 1}, task=True)  # queued behind it: it has had its turn
        assert after.result(timeout=WAIT).content[0].text.startswith("2 ")
        assert queued.task_id is not None and not deployment.started(queued.task_id)
        assert queued.status().status == "cancelled"


# --- questions: both eras ------------------------------------------------------------------------
def _wire(deployment: Deployment, era: str) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """One request by hand, as a client of ``era`` sends it (a legacy session that declared the
    extension and elicitation, or self-contained 2026-07-28 requests); its result."""
    if era == "legacy":
        session = legacy_handshake(deployment.url, LEGACY, capabilities=WITH_ELICITATION)
        return lambda method, params: session.rpc(method, params)["result"]
    return lambda method, params: modern_rpc(deployment.url, method, params, capabilities=WITH_ELICITATION)["result"]


def _poll(rpc: Callable[[str, dict[str, Any]], dict[str, Any]], task_id: str, status: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def reached() -> bool:
        found.append(rpc("tasks/get", {"taskId": task_id}))
        return bool(found[-1]["status"] == status)

    assert wait_for(reached, WAIT), f"task {task_id} never became {status}; last: {found[-1:]}"
    return found[-1]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_question_ends_the_run_and_the_answer_runs_the_body_again(deployment: Deployment, era: str) -> None:
    rpc = _wire(deployment, era)
    created = rpc("tools/call", {"name": "confirm", "arguments": {"filename": "a.txt"}})
    task_id = created["taskId"]
    waiting = _poll(rpc, task_id, "input_required")
    [(key, request)] = waiting["inputRequests"].items()
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "Delete a.txt?"
    assert deployment.redis.get(f"runs:{task_id}") == b"1"
    rpc("tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}})
    done = _poll(rpc, task_id, "completed")
    # run 2: from the top, the question answered at once from the record
    assert done["result"]["content"][0]["text"] == f"a.txt deleted on run 2 (pid {deployment.worker.pid})"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_answers_a_task_question_with_its_elicitation_callback(deployment: Deployment, mode: str) -> None:
    asked: list[str] = []
    with Client(deployment.url, mode=mode, elicitation_callback=accepting(asked)) as client:
        handle = client.call_tool("confirm", {"filename": "b.txt"}, task=True)
        text = handle.result(timeout=WAIT).content[0].text
    assert text == f"b.txt deleted on run 2 (pid {deployment.worker.pid})"
    assert asked == ["Delete b.txt?"]


# --- the how-to's program -------------------------------------------------------------------------
def test_the_how_to_server_runs_its_bodies_on_its_worker(serve_http: Callable[..., str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """docs_src/how_to/tasks_on_celery.py as the page says to run it: its worker
    (``celery -A tasks_on_celery worker``) and its server, on one Redis over TCP by ``REDIS_URL``."""
    require_service(_celery_installed(), "Celery", "pip install celery")
    how_to = DOCS_SOURCES / "how_to"
    directory = Path(tempfile.mkdtemp(prefix="minimcp-celery-", dir="/tmp"))
    try:
        with RedisServer(directory, persistent=False, tcp=True) as server:
            url = f"redis://127.0.0.1:{server.port}/0"
            monkeypatch.setenv("REDIS_URL", url)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
            with _worker(env, "tasks_on_celery", how_to) as worker:
                mcp = runpy.run_path(str(how_to / "tasks_on_celery.py"))["mcp"]
                try:
                    asked: list[str] = []
                    with Client(serve_http(mcp), elicitation_callback=accepting(asked)) as client:
                        text = client.call_tool("export", {"table": "orders"}, task=True).result(timeout=WAIT)
                finally:
                    mcp.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert text.content[0].text == f"orders exported by worker process {worker.pid}"
    assert asked == ["Publish orders?"]


def test_a_resolved_value_settled_on_the_call_travels_to_the_worker(deployment: Deployment) -> None:
    arguments = {"name": "resolved_first", "arguments": {"label": "door"}}
    first = modern_rpc(deployment.url, "tools/call", arguments, capabilities=WITH_ELICITATION)["result"]
    assert first["resultType"] == "input_required"
    [key] = first["inputRequests"]
    second = modern_rpc(deployment.url, "tools/call", {
        **arguments, "requestState": first["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}}, capabilities=WITH_ELICITATION)
    rpc = _wire(deployment, "2026-07-28")
    done = _poll(rpc, second["result"]["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == f"door: go=True (pid {deployment.worker.pid})"


# --- what is refused, and why ----------------------------------------------------------------------
def test_the_server_path_must_be_module_and_attribute() -> None:
    require_service(_celery_installed(), "Celery", "pip install celery")
    from celery import Celery

    from minimcp.server.tasks.celery import CeleryExecutor

    with pytest.raises(ValueError, match="package.module:attribute"):
        CeleryExecutor(Celery("refused"), server="myapp.mcp")


def _executor_server(store: Any, broker: str) -> Any:
    from celery import Celery

    from minimcp.server import MCPServer, TaskOptions
    from minimcp.server.tasks.celery import CeleryExecutor

    app = Celery("refusing", broker=broker)
    app.conf.broker_connection_retry = False
    mcp = MCPServer("refusing", tasks=TaskOptions(task_store=store, task_executor=CeleryExecutor(app, server="x:mcp")))
    mcp.tool(task=True)(_double)
    return mcp


def _double(n: int) -> int:
    return 2 * n


def test_an_executor_over_a_store_of_one_process_is_refused_naming_the_fix(serve_http: Callable[..., str]) -> None:
    require_service(_celery_installed(), "Celery", "pip install celery")
    mcp = _executor_server(None, "memory://")
    error = modern_rpc(serve_http(mcp), "tools/call", {"name": "_double", "arguments": {"n": 2}},
                       capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}})["error"]
    assert error["code"] == -32603 and "shared task store" in error["message"]


def test_an_unreachable_broker_is_a_try_again(redis_server: RedisServer, serve_http: Callable[..., str]) -> None:
    require_service(_celery_installed(), "Celery", "pip install celery")
    from minimcp.server.tasks.redis_store import RedisTaskStore

    client = redis_server.client()
    mcp = _executor_server(RedisTaskStore(client), f"redis+socket://{redis_server.socket}.absent")
    try:
        error = modern_rpc(serve_http(mcp), "tools/call", {"name": "_double", "arguments": {"n": 2}},
                           capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}})["error"]
    finally:
        client.close()
    assert error["code"] == -32603
    assert "Celery's broker" in error["message"] and error["message"].endswith("try again")
