"""A server for the multi-process tests: ``gunicorn shared_server:app`` or ``python shared_server.py``.

``MINIMCP_TEST_BACKEND`` (a Redis URL) is its ``backend=``; without it the server keeps everything
in its process, as by default. No request-state key is configured: with a backend the keys come from it.
Run as a program it listens on a port the system picks and announces its URL once it accepts.
"""

import os
import time

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("Shared", backend=os.environ.get("MINIMCP_TEST_BACKEND") or None)


class Ok(BaseModel):
    ok: bool


@mcp.tool()
def confirm(door: str, ctx: Context) -> str:
    """Ask one question; the answer may arrive on any process."""
    answer = ctx.elicit(f"Open {door}?", schema=Ok)
    return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"


@mcp.tool()
def pid() -> int:
    return os.getpid()


@mcp.tool()
def touch(uri: str, ctx: Context) -> str:
    """Announce that ``uri`` changed, to every listener of every process."""
    ctx.notify_resource_updated(uri)
    return f"touched {uri} on {os.getpid()}"


@mcp.tool()
def hang(seconds: float) -> str:
    """A call that outlives its process when the test kills the process meanwhile."""
    time.sleep(seconds)
    return "slept"


@mcp.resource("note://{name}")
def note(name: str) -> str:
    return f"note {name}"


app = mcp.wsgi_app(keepalive_interval=1.0)

if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=0)
