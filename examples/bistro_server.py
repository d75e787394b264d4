"""The seed page's form-mode example, made synchronous: offer another date when the bistro is full.

Run it with ``python examples/bistro_server.py`` (Streamable HTTP on http://127.0.0.1:8000/mcp),
then ``python examples/client.py`` in a second terminal.
"""

from pydantic import BaseModel, Field

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("Bistro")


class AlternativeDate(BaseModel):
    accept_alternative: bool = Field(description="Try another date?")
    date: str = Field(default="2025-12-26", description="Alternative date (YYYY-MM-DD)")


@mcp.tool()
def book_table(date: str, party_size: int, ctx: Context) -> str:
    """Book a table at the bistro."""
    if date != "2025-12-25":
        return f"Booked a table for {party_size} on {date}."

    result = ctx.elicit(
        message=f"No tables for {party_size} on {date}. Would you like to try another date?",
        schema=AlternativeDate,
    )
    if result.action == "accept" and result.data.accept_alternative:
        return book_table(result.data.date, party_size, ctx)
    return "No booking made."


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
