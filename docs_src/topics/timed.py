"""Every request the adder server (adder.py, beside this file) receives, timed and logged."""

import logging
import time

from adder import server
from minimcp import Client
from minimcp.server.context import CallNext, HandlerResult, ServerRequestContext


def timed(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
    start = time.perf_counter()
    try:
        return call_next(ctx)  # lookup, validation, the handler; raises the MCPError the client gets
    finally:
        logging.info("%s took %.1f ms", ctx.method, (time.perf_counter() - start) * 1000)


server.middleware.append(timed)            # or MCPServer("name", middleware=[timed]); mcp.middleware

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    with Client(server, mode="legacy") as client:   # logs initialize, notifications/initialized, tools/call
        print(client.call_tool("add", {"a": 1, "b": 2}).content[0].text)
