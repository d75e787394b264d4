"""The upstream of tests/test_proxy.py: a minimcp server with a tool for each thing a proxy relays.

Usage: ``python tests/servers/proxy_upstream.py`` (stdio), ``... --http`` (Streamable HTTP on a port
the system picks, announced as ``serving MCP on http://127.0.0.1:PORT/mcp``); ``upstream()`` builds
the same server in a test's own process.
"""

import os
import sys
import threading
import time
from typing import Annotated, Any

from pydantic import BaseModel

from minimcp import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context, ListRoots, Resolve, Sample
from minimcp.server.mcpserver.exceptions import ToolError
from minimcp.types import Completion, CreateMessageResult, ListRootsResult, SamplingMessage, TextContent


class Proceed(BaseModel):
    proceed: bool


def upstream(name: str = "upstream") -> MCPServer:
    mcp = MCPServer(name)
    #: Set when a ``wait_for_cancel`` call saw its client cancel it.
    mcp.cancelled_seen = threading.Event()  # type: ignore[attr-defined]

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def confirm(item: str, ctx: Context) -> str:
        """Ask the user to confirm ``item``."""
        answer = ctx.elicit(f"Proceed with {item}?", schema=Proceed)
        return f"{item}: {answer.action} {getattr(answer, 'data', None)}"

    @mcp.tool()
    def visit(ctx: Context) -> str:
        """Send the user to a page."""
        return f"visit: {ctx.elicit_url('Open the page', 'https://example.com/consent', 'consent-1').action}"

    def capital() -> Sample:
        return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Capital of France?"))],
                      max_tokens=20)

    @mcp.tool()
    def ask_model(answer: Annotated[CreateMessageResult, Resolve(capital)]) -> str:
        """Ask the client's model."""
        return f"model said {answer.content.text}"

    def roots() -> ListRoots:
        return ListRoots()

    @mcp.tool()
    def count_roots(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        """Count the client's roots."""
        return f"{len(found.roots)} root(s)"

    @mcp.tool()
    def work(steps: int, ctx: Context) -> str:
        """Report progress and log each step."""
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps, f"step {step}")
            ctx.session.send_log_message("info", f"did step {step}", "worker", ctx.request_context.request_id)
        return f"did {steps} steps"

    @mcp.tool()
    def wait_for_cancel(ctx: Context) -> str:
        """Wait (at most 20 s) for the client to cancel this call."""
        deadline = time.monotonic() + 20
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        if ctx.cancelled:
            mcp.cancelled_seen.set()  # type: ignore[attr-defined]
        return "cancelled" if ctx.cancelled else "never cancelled"

    @mcp.tool()
    def nap(seconds: float) -> str:
        """Sleep, then answer."""
        time.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool()
    def fail() -> str:
        """Fail as a tool does: an isError result."""
        raise ToolError("the tool failed on purpose")

    @mcp.tool()
    def refuse() -> str:
        """Fail the whole request: a JSON-RPC error of the server's own."""
        raise MCPError(-32042, "refused on purpose", {"why": "testing"})

    @mcp.tool()
    def die() -> str:
        """Exit the process in the middle of the call."""
        sys.stdout.flush()
        os._exit(3)

    @mcp.tool(task=True)
    def long_job(n: int) -> str:
        """A tool that runs as a task."""
        time.sleep(0.2)
        return f"job {n} done"

    @mcp.resource("notes://today")
    def today() -> str:
        return "buy milk"

    @mcp.resource("notes://day/{day}")
    def note_of(day: str) -> str:
        return f"notes of {day}"

    @mcp.prompt()
    def greet(who: str) -> str:
        return f"Hello, {who}!"

    @mcp.completion()
    def complete(ref: Any, argument: Any, context: Any) -> Completion:
        """``who`` of ``greet`` and ``day`` of ``notes://day/{day}``, by their first letters."""
        known = {"who": ["Ada", "Alan", "Grace"], "day": ["monday", "tuesday"]}.get(argument.name, [])
        return Completion(values=[value for value in known if value.startswith(argument.value)])

    return mcp


mcp = upstream()

if __name__ == "__main__":
    if "--http" in sys.argv:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(message)s")
        mcp.run(transport="streamable-http", host="127.0.0.1", port=0)
    else:
        mcp.run()
