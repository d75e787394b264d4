#!/usr/bin/env python3
"""The peer: the official Python SDK (``mcp`` on PyPI) serving ``load.py``'s two tools.

    python benchmarks/official_server.py PORT [--profile fast|stateful] [--host 127.0.0.1]
                                              [--loop uvloop|asyncio|auto] [--http httptools|h11|auto]

It runs as the SDK's users deploy it at its best: one uvicorn process with ``uvicorn[standard]``'s
httptools parser and uvloop event loop (the defaults here; ``--http h11 --loop asyncio`` measures
the pure-Python stack), access log off, SDK log level WARNING, as ``bench_server.py`` runs minimcp.

Tools, the same contract as ``bench_server.py``:

    echo(text: str) -> str     the text back
    confirm(n: int) -> str     one yes/no question through a resolver (``Elicit``), then
                               ``"confirmed {n}"`` when accepted

Profiles (one ASGI app serves both eras; the SDK picks by the version header):

    fast      ``streamable_http_app(stateless_http=True, json_response=True)``: no sessions, one
              JSON body per POST; 2026-07-28 rows (its elicitation is input_required + retry).
    stateful  ``streamable_http_app()``, the SDK's default: legacy sessions and SSE responses,
              which a legacy elicitation needs; legacy rows.
"""

from __future__ import annotations

import argparse
from typing import Annotated

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, Resolve
from pydantic import BaseModel

mcp = MCPServer("bench-official", log_level="WARNING")


class Confirmation(BaseModel):
    confirm: bool


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


async def ask(n: int) -> Elicit[Confirmation]:
    return Elicit(f"Proceed with item {n}?", Confirmation)


@mcp.tool()
async def confirm(n: int, answer: Annotated[ElicitationResult[Confirmation], Resolve(ask)]) -> str:
    """Ask the user to confirm item n, then report the decision."""
    accepted = isinstance(answer, AcceptedElicitation) and answer.data.confirm
    return f"{'confirmed' if accepted else 'declined'} {n}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", type=int)
    ap.add_argument("--profile", default="fast", choices=["fast", "stateful"])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--loop", default="uvloop", help="uvicorn --loop (uvloop: uvicorn[standard]'s)")
    ap.add_argument("--http", default="httptools", help="uvicorn --http (httptools: uvicorn[standard]'s)")
    args = ap.parse_args()
    app = (mcp.streamable_http_app(stateless_http=True, json_response=True) if args.profile == "fast"
           else mcp.streamable_http_app())
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False, loop=args.loop,
                http=args.http)


if __name__ == "__main__":
    main()
