"""The server the command-line tests point ``minimcp`` at: as a file, as ``python cli_server.py``
(stdio), and as ``minimcp run cli_server.py --http --port 0`` (HTTP on a port it announces).

One of everything the verbs show: typed arguments, structured output, a failing tool, progress
and log messages, a task, a resource, a template and a prompt.
"""

import time

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("Almanac", instructions="Tides and notes for the harbour.")


class Echo(BaseModel):
    count: int
    ratio: float
    loud: bool
    tags: list[str]
    options: dict[str, int]
    note: str


@mcp.tool()
def echo(count: int, ratio: float, loud: bool, tags: list[str], options: dict[str, int], note: str = "") -> Echo:
    """Send the arguments back, typed as they arrived."""
    return Echo(count=count, ratio=ratio, loud=loud, tags=tags, options=options, note=note)


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ToolError(f"refused: {reason}")


@mcp.tool()
def count_to(n: int, ctx: Context) -> str:
    """Count, reporting progress and logging each step."""
    for i in range(1, n + 1):
        ctx.report_progress(i, n, f"step {i}")
        ctx.info(f"counted {i}")
    return f"counted to {n}"


@mcp.tool(task=True)
def survey(area: str) -> str:
    """A long job: run it as a task."""
    time.sleep(1.5)  # long enough for the client to see it working
    return f"surveyed {area}"


@mcp.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary of a topic."""
    return f"Summarize what is known about {topic}."


@mcp.resource("notes://today", mime_type="text/plain")
def today() -> str:
    """Today's note."""
    return "High tide at 06:12."


@mcp.resource("notes://{day}")
def note(day: str) -> str:
    """The note of any day."""
    return f"Note for {day}."


if __name__ == "__main__":
    mcp.run()
