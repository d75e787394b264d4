"""The exports server with its task bodies on the application's Celery workers: the web processes
queue each run, ``celery -A tasks_on_celery worker`` runs it, and a task outlives the web process
that created it. One Redis is Celery's broker and the tasks' store."""

import os

from celery import Celery
from pydantic import BaseModel

from minimcp.server import MCPServer, TaskOptions
from minimcp.server.mcpserver import Context
from minimcp.server.tasks.celery import CeleryExecutor

redis_url = os.environ.get("REDIS_URL", "redis://localhost:6379/0")
app = Celery("exports", broker=redis_url)           # or the application's own Celery app
mcp = MCPServer("exports", backend=redis_url,        # every web process and every worker sees the same tasks
                tasks=TaskOptions(task_executor=CeleryExecutor(app, server="tasks_on_celery:mcp")))


class Confirm(BaseModel):
    ok: bool = True


@mcp.tool(task=True)
def export(table: str, ctx: Context) -> str:
    if ctx.elicit(f"Publish {table}?", Confirm).action != "accept":   # the run ends here until answered
        return "kept"
    return f"{table} exported by worker process {os.getpid()}"


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
