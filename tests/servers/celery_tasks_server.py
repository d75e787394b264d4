"""A task server whose bodies run on Celery workers, for the tests that start one of each:
``celery -A celery_tasks_server worker`` (the worker: this module holds the Celery app) and
``python celery_tasks_server.py`` (the web process, announcing its URL once it listens).

Both share the redis-server whose unix socket ``MINIMCP_TEST_REDIS`` names: it is Celery's broker
and the task store. The bodies report to Redis lists (``started``, ``stopped``) so a test sees what
a body on the worker did, ``gated`` waits for the test to push ``release:<task id>``, and each run of
``confirm`` counts itself in ``runs:<task id>``; ``resolved_first``'s ``Resolve(...)`` value is
settled in the web process and travels to the worker.
"""

import os
import time
from typing import Annotated

import redis
from celery import Celery
from pydantic import BaseModel

from minimcp.server import MCPServer, TaskOptions
from minimcp.server.mcpserver import Context, Elicit, Resolve
from minimcp.server.tasks.celery import CeleryExecutor
from minimcp.server.tasks.redis_channel import RedisTaskChannel
from minimcp.server.tasks.redis_store import RedisTaskStore

socket = os.environ["MINIMCP_TEST_REDIS"]
client = redis.Redis(unix_socket_path=socket, socket_timeout=30)

app = Celery("celery-tasks-test", broker=f"redis+socket://{socket}")
app.conf.update(broker_connection_retry_on_startup=True, worker_prefetch_multiplier=1,
                worker_hijack_root_logger=False)

mcp = MCPServer("celery-tasks", tasks=TaskOptions(
    task_store=RedisTaskStore(client), task_channel=RedisTaskChannel(client),
    task_executor=CeleryExecutor(app, server="celery_tasks_server:mcp")))
mcp.tasks.poll_interval = 0.05


class Confirm(BaseModel):
    confirm: bool


@mcp.tool(task=True)
def add(a: int, b: int) -> str:
    return f"{a + b} (pid {os.getpid()})"


@mcp.tool(task=True)
def gated(ctx: Context) -> str:
    client.rpush("started", ctx.request_id)
    released = client.blpop([f"release:{ctx.request_id}"], timeout=20)  # under the client's socket_timeout
    return f"released (pid {os.getpid()})" if released else "never released"


@mcp.tool(task=True)
def endless(ctx: Context) -> str:
    client.rpush("started", ctx.request_id)
    while not ctx.cancelled:
        time.sleep(0.02)
    client.rpush("stopped", ctx.request_id)
    return "stopped"


@mcp.tool(task=True)
def confirm(filename: str, ctx: Context) -> str:
    runs = client.incr(f"runs:{ctx.request_id}")
    answer = ctx.elicit(f"Delete {filename}?", Confirm)
    verdict = "deleted" if answer.action == "accept" and answer.data.confirm else "kept"
    return f"{filename} {verdict} on run {runs} (pid {os.getpid()})"


def ask_go_ahead() -> Elicit[Confirm]:
    return Elicit("Go ahead?", Confirm)


@mcp.tool(task="required")
def resolved_first(go: Annotated[Confirm, Resolve(ask_go_ahead)], label: str = "x") -> str:
    """Its resolver is settled on the tools/call rounds; the value travels to the worker as JSON."""
    return f"{label}: go={go.confirm} (pid {os.getpid()})"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=0)
