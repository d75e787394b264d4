"""A server no one here wrote: the official async Python SDK, asking one question, on uvicorn.

Usage: ``python official_confirm.py``. Serves ``confirm(n)`` at ``http://127.0.0.1:PORT/mcp`` on a port the
system picks; uvicorn announces ``http://127.0.0.1:PORT`` on stderr once it listens. With ``--stdio``, serves
it on stdin and stdout instead.
"""

import sys
from typing import Annotated

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, Resolve
from pydantic import BaseModel

mcp = MCPServer("official", log_level="WARNING")


class Confirmation(BaseModel):
    confirm: bool


async def ask_confirm(n: int) -> Elicit[Confirmation]:
    return Elicit(f"Proceed with item {n}?", Confirmation)


@mcp.tool()
async def confirm(n: int, answer: Annotated[ElicitationResult[Confirmation], Resolve(ask_confirm)]) -> str:
    """Ask the user to confirm item n."""
    if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
        return f"confirmed {n}"
    return f"declined {n}"


if __name__ == "__main__" and "--stdio" in sys.argv:
    mcp.run()
elif __name__ == "__main__":
    uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=0, log_level="info", access_log=False)
