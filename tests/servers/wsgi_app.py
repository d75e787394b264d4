"""A minimcp app as a production WSGI server loads it (``wsgi_app:app``), for the tests that serve
it with such a server in a process of its own: an echo and a tool that asks one question."""

from __future__ import annotations

from pydantic import BaseModel, Field

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("wsgi-app")


class Copies(BaseModel):
    copies: int = Field(description="How many copies?")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
def reserve(title: str, ctx: Context) -> str:
    """Reserve a book, asking how many copies."""
    answer = ctx.elicit(f"How many copies of {title!r}?", schema=Copies)
    if answer.action != "accept":
        return f"Nothing reserved ({answer.action})."
    return f"Reserved {answer.data.copies} of {title!r}."


app = mcp.wsgi_app()
