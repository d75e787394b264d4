"""A server asking one question, for tests that need a separate process: ``python vault_server.py PORT``.

Every process started with the same ``MINIMCP_TEST_KEY`` (hex) seals and opens the same requestState.
"""

import os
import sys

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context, RequestStateSecurity

mcp = MCPServer("Vault", log_level="WARNING",
                request_state_security=RequestStateSecurity(keys=[bytes.fromhex(os.environ["MINIMCP_TEST_KEY"])]))


class Ok(BaseModel):
    ok: bool


@mcp.tool()
def open_vault(door: str, ctx: Context) -> str:
    answer = ctx.elicit(f"Open {door}?", schema=Ok)
    return f"{door}: {answer.action} (pid {os.getpid()})"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=int(sys.argv[1]))
