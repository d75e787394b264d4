"""A tool that outlives its request: the export runs as a task, stops when cancelled, and asks
before publishing. ``python export_task.py`` serves it at http://127.0.0.1:8000/mcp."""

from collections.abc import Iterator

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("exports")
written: list[str] = []
published: list[str] = []


class Confirm(BaseModel):
    ok: bool = True


def chunks(table: str) -> Iterator[str]:
    return (f"{table}-{part}" for part in range(3))


def write(chunk: str) -> None:
    written.append(chunk)


def publish(table: str) -> None:
    published.append(table)


@mcp.tool(task=True)            # "required": only clients that declare the extension may call it
def export(table: str, ctx: Context) -> str:
    for chunk in chunks(table):
        if ctx.cancelled:       # tasks/cancel, or the task's TTL, sets it
            return "stopped"
        write(chunk)
    if ctx.elicit("Publish the export?", Confirm).action == "accept":
        publish(table)
    return "exported"


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
