"""The official async Python SDK on the deprecated HTTP+SSE transport, on uvicorn.

Usage: ``python official_sse.py``. Serves ``GET /sse`` (the event stream) and ``POST /messages/``
on a port the system picks; uvicorn announces ``http://127.0.0.1:PORT`` on stderr once it listens.
Tools: ``add(a, b)``, and ``confirm(n)``, which asks one yes/no question.
"""

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel

mcp = MCPServer("official-sse", log_level="WARNING")


class Confirmation(BaseModel):
    confirm: bool


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
async def confirm(n: int, ctx: Context) -> str:
    """Ask the user to confirm item n."""
    answer = await ctx.elicit(f"Proceed with item {n}?", schema=Confirmation)
    return f"confirmed {n}" if answer.action == "accept" and answer.data.confirm else f"declined {n}"


@mcp.prompt()
def greet(name: str) -> str:
    return f"Hello {name}"


if __name__ == "__main__":
    uvicorn.run(mcp.sse_app(), host="127.0.0.1", port=0, log_level="info", access_log=False)
