"""One server, both eras at once: a resolver's question reaches a legacy client and a 2026-07-28
client alike, through two in-memory clients open at the same time. ``python examples/serving_legacy_clients.py``.
"""

from typing import Annotated

from pydantic import BaseModel

from minimcp import Client
from minimcp.client import ClientRequestContext
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Elicit, Resolve
from minimcp.types import ElicitRequestParams, ElicitResult

mcp = MCPServer("Bookshop")


class Quantity(BaseModel):
    copies: int


def ask_quantity(title: str) -> Elicit[Quantity]:
    return Elicit("How many copies?", Quantity)


@mcp.tool()
def reserve(title: str, quantity: Annotated[Quantity, Resolve(ask_quantity)]) -> str:
    """Reserve copies of a book."""
    return f"Reserved {quantity.copies} of '{title}'."


def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"copies": 2})


def main() -> None:
    with Client(mcp, mode="legacy", elicitation_callback=answer) as legacy, \
            Client(mcp, elicitation_callback=answer) as modern:
        for client in (legacy, modern):
            result = client.call_tool("reserve", {"title": "Dune"})
            print(client.protocol_version, result.structured_content)


if __name__ == "__main__":
    main()
