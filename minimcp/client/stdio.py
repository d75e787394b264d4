"""Launching a server as a subprocess and talking to it over its stdin and stdout.

The child gets a small, predictable environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``,
``TERM``, ``USER`` from ours, plus ``env=``) rather than everything we hold, so secrets in the
parent's environment do not leak into a third-party server by default.
"""

from __future__ import annotations

import sys
from typing import IO

from pydantic import BaseModel, ConfigDict, Field

from minimcp.client.transports import StdioTransport, default_environment


class StdioServerParameters(BaseModel):
    model_config = ConfigDict(defer_build=True)

    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None


def stdio_client(params: StdioServerParameters, errlog: IO[str] | None = sys.stderr) -> StdioTransport:
    """A transport that starts ``params.command`` when connected and ends it on close.

    ``Client(...)`` takes it, and so does the official shape
    ``with stdio_client(params) as (read, write): with ClientSession(read, write) as session:``.
    The server's stderr goes to ``errlog``.
    """
    env = {**default_environment(), **(params.env or {})}
    return StdioTransport(params.command, list(params.args), env, params.cwd, errlog)


__all__ = ["StdioServerParameters", "stdio_client"]
