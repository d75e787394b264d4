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


class Name(BaseModel):
    name: str


@mcp.tool()
def ask_name(ctx: Context) -> str:
    """Ask the client for a name; say on stderr how the question ended."""
    try:
        answer = ctx.elicit("Your name?", Name)
    except MCPError as error:
        print(f"ask_name: {error}", flush=True)
        raise
    print(f"ask_name: {answer.action}", flush=True)
    return answer.action


@mcp.tool()
def nap(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


class Proceed(BaseModel):
    proceed: bool


@mcp.tool()
def ask(ctx: Context) -> str:
    """Ask the client a question; say what came of it."""
    try:
        answer = ctx.elicit("Proceed?", schema=Proceed)
    except MCPError as failed:  # the client left without answering
        return f"no answer: {failed}"
    return answer.action


if __name__ == "__main__":
    mcp.run()
