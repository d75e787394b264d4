"""A stdio server for tests/test_stdio_server.py: ``python tests/servers/stdio_server.py``."""

import os
import sys
import time

from pydantic import BaseModel

from minimcp import MCPError
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


@mcp.tool()
def wait_for_cancel(ctx: Context) -> str:
    """Wait (at most 20 s) for the client to cancel this call; say whether it did, on stderr too
    (a cancelled call's answer is not sent)."""
    deadline = time.monotonic() + 20
    while not ctx.cancelled and time.monotonic() < deadline:
        time.sleep(0.01)
    outcome = "cancelled" if ctx.cancelled else "never cancelled"
    print(f"wait_for_cancel: {outcome}", flush=True)
    return outcome


@mcp.tool()
def nap(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


class Proceed(BaseModel):
    proceed: bool


@mcp.tool()
def ask(ctx: Context) -> str:
    """Ask the client a question; say what came of it, on stderr too (a cancelled call's answer is
    not sent)."""
    try:
        outcome = ctx.elicit("Proceed?", schema=Proceed).action
    except MCPError as failed:  # the client left, or cancelled, without answering
        outcome = f"no answer: {failed}"
    print(f"ask: {outcome}", flush=True)
    return outcome


if __name__ == "__main__":
    mcp.run()
