"""The official async Python SDK answering every request with one JSON body (``json_response=True``), on uvicorn.

Usage: ``python official_json.py``. Serves ``crunch(seconds)`` at ``http://127.0.0.1:PORT/mcp``, a call
that says nothing until it ends; it prints ``crunch started`` when it begins and ``crunch cancelled``
when the server cancels it (a ``notifications/cancelled`` or, in 2026-07-28, a hang-up), on stdout.
uvicorn announces ``http://127.0.0.1:PORT`` on stderr once it listens.
"""

import anyio
import uvicorn
from mcp.server import MCPServer

mcp = MCPServer("official-json", log_level="WARNING")


@mcp.tool()
async def crunch(seconds: float) -> str:
    """Work quietly for ``seconds``."""
    print("crunch started", flush=True)
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        print("crunch cancelled", flush=True)
        raise
    print("crunch finished", flush=True)
    return "done"


if __name__ == "__main__":
    uvicorn.run(mcp.streamable_http_app(json_response=True), host="127.0.0.1", port=0, log_level="info",
                access_log=False)
