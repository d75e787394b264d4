"""One server made of two: the shop serves the billing server's components under ``billing``."""

import contextlib
from collections.abc import Iterator

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context


@contextlib.contextmanager
def ledger(server: MCPServer) -> Iterator[dict[str, list[str]]]:
    yield {"invoices": []}  # opened inside the shop's lifespan, closed before it ends


billing = MCPServer("billing", lifespan=ledger)


@billing.tool()
def create_invoice(customer: str, amount: int, ctx: Context) -> str:
    invoices = ctx.request_context.lifespan_context["invoices"]
    invoices.append(f"{customer}: {amount} EUR")
    return f"INV-{len(invoices)}"


@billing.resource("invoice://{number}")
def invoice(number: str) -> str:
    return f"invoice {number}"


@billing.prompt()
def remind(customer: str) -> str:
    return f"Remind {customer} to pay"


mcp = MCPServer("shop")


@mcp.tool()
def quote(item: str) -> str:
    return f"{item}: 3 EUR"


mcp.mount(billing, namespace="billing")
# Clients see the tools quote and billing_create_invoice, the template invoice://billing/{number}
# and the prompt billing_remind.

if __name__ == "__main__":
    mcp.run(transport="streamable-http")
