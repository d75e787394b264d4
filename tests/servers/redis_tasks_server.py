"""A task server whose tasks live in a shared Redis, for tests that run several copies of it:
``python redis_tasks_server.py``.

Every process started with the same ``MINIMCP_TEST_REDIS`` (a redis-server's unix socket) serves
the same tasks. ``MINIMCP_TEST_HEARTBEAT`` (seconds) is how soon a silent process's tasks fail.
The bodies report to Redis lists (``started``, ``stopped``) so a test can see what a body in
another process did, and ``gated`` waits for the test to push ``release:<task id>``. It listens on a
port the system picks and announces its URL once it accepts connections; ``redis_tasks_wsgi.py``
serves the same server to gunicorn.
"""

import contextvars
import os
import time
from typing import Any

import redis

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.server.tasks.redis_channel import RedisTaskChannel
from minimcp.server.tasks.redis_store import RedisTaskStore
from pydantic import BaseModel

client = redis.Redis(unix_socket_path=os.environ["MINIMCP_TEST_REDIS"], socket_timeout=10)
heartbeat = float(os.environ.get("MINIMCP_TEST_HEARTBEAT", "10"))
#: Set by a middleware around each request: a body shows in whose request's context it runs.
via: contextvars.ContextVar[str] = contextvars.ContextVar("via", default="no request")


def remember(ctx: Any, call_next: Any) -> Any:
    via.set(f"{ctx.method} by {ctx.transport.principal or 'anyone'}")
    return call_next(ctx)


mcp = MCPServer("tasks-everywhere", task_store=RedisTaskStore(client),
                task_channel=RedisTaskChannel(client, heartbeat=heartbeat), middleware=[remember])
mcp.tasks.poll_interval = 0.05


class Confirm(BaseModel):
    confirm: bool


@mcp.tool(task=True)
def add(a: int, b: int, ctx: Context) -> str:
    ctx.report_progress(1, 2, f"adding in {os.getpid()}")
    return f"{a + b} (pid {os.getpid()})"


@mcp.tool(task=True)
def gated(ctx: Context) -> str:
    released = client.blpop([f"release:{ctx.request_id}"], timeout=8)  # under the client's socket_timeout
    return "released" if released else "never released"


@mcp.tool(task=True)
def endless(ctx: Context) -> str:
    client.rpush("started", f"{ctx.request_id} {os.getpid()}")
    while not ctx.cancelled:
        time.sleep(0.01)
    client.rpush("stopped", f"{ctx.request_id} {os.getpid()}")
    return "stopped"


@mcp.tool(task=True)
def confirm(filename: str, ctx: Context) -> str:
    answer = ctx.elicit(f"Delete {filename}?", Confirm)
    verdict = "deleted" if answer.action == "accept" and answer.data.confirm else "kept"
    return f"{filename} {verdict} (pid {os.getpid()}) in the context of {via.get()}"


def caller(environ: dict) -> str | None:
    """The caller is whoever the X-Test-User header names, as an authenticating proxy would say."""
    return environ.get("HTTP_X_TEST_USER") or None


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=0, principal=caller)
