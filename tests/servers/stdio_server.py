"""A stdio server for tests/test_stdio_server.py: ``python tests/servers/stdio_server.py``."""

import os
import sys

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("stdio-test", version="0.0.1")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
def noisy(text: str) -> str:
    """Write to stdout three ways, then answer."""
    print(f"print says {text}")
    sys.stdout.write(f"sys.stdout says {text}\n")
    sys.stdout.flush()
    os.write(1, f"fd 1 says {text}\n".encode())
    return f"quiet {text}"


@mcp.tool()
def era(ctx: Context) -> str:
    return f"{ctx.protocol_version} legacy={ctx.session.legacy}"


@mcp.tool()
def boom() -> str:
    raise RuntimeError("kaboom")


if __name__ == "__main__":
    mcp.run()
