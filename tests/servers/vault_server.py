"""A server asking one question, for tests that need a separate process: ``python vault_server.py``.

Every process started with the same ``MINIMCP_TEST_KEY`` (hex) seals and opens the same requestState.
It listens on a port the system picks (``port=0``) and announces its URL on stderr once it accepts
connections (``mcp.run`` logs it at INFO): a port chosen by the test and bound here later could be
taken in between by any other process of a busy machine, and the test would then talk to that process.
"""

import os

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context, RequestStateSecurity

mcp = MCPServer("Vault", request_state_security=RequestStateSecurity(keys=[bytes.fromhex(os.environ["MINIMCP_TEST_KEY"])]))


class Ok(BaseModel):
    ok: bool


@mcp.tool()
def open_vault(door: str, ctx: Context) -> str:
    answer = ctx.elicit(f"Open {door}?", schema=Ok)
    return f"{door}: {answer.action} (pid {os.getpid()})"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=0)
