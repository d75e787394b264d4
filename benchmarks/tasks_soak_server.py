"""The server ``tasks_soak.py`` measures: task tools on minimcp's HTTP server, with a short task TTL.

    python benchmarks/tasks_soak_server.py PORT [--ttl 30]

``work(seconds)`` runs as a task until done or cancelled, ``ask()`` waits in ``input_required``
for one answer, ``quick()`` finishes at once. Idle workers (of the task pool and the request pool)
end after one second, so a thread count taken after the load shows what tasks still hold, not
what the pools keep warm.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp: MCPServer[Any] = MCPServer("tasks-soak")


class Go(BaseModel):
    go: bool


@mcp.tool(task=True)
def work(seconds: float, ctx: Context) -> str:
    """Works until ``seconds`` have passed or the task is cancelled (or expires)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.02)
    return "cancelled" if ctx.cancelled else "done"


@mcp.tool(task=True)
def ask(ctx: Context) -> str:
    """Waits (without a thread) for one answer."""
    answer = ctx.elicit("Go?", Go)
    return "went" if answer.action == "accept" and answer.data.go else "stayed"


@mcp.tool(task=True)
def quick(n: int) -> str:
    """Finishes at once; its result stays stored until the TTL."""
    return f"quick {n} " + "x" * 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--ttl", type=float, default=30.0)
    args = parser.parse_args()
    mcp.tasks.ttl = args.ttl
    mcp.tasks.pool.idle_timeout = 1.0
    mcp.pool.idle_timeout = 1.0  # the request workers too: what stays is the server's own threads
    mcp.run(transport="streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
