"""A tool that asks the user halfway through, and gets the answer back in the same call."""

from pydantic import BaseModel, Field

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("Invoices")
sent: list[str] = []  # stands in for the mail server


class Recipient(BaseModel):
    email: str = Field(description="Where should the invoice go?")
    copy_to_me: bool = Field(default=False, description="Send me a copy too?")


@mcp.tool()
def send_invoice(invoice_id: int, ctx: Context) -> str:
    """Email an invoice, asking the user for the address."""
    answer = ctx.elicit(f"Where should invoice {invoice_id} go?", schema=Recipient)
    if answer.action != "accept":
        return f"Invoice {invoice_id} not sent ({answer.action})."
    sent.append(answer.data.email)  # the side effect comes after the last question
    copy = ", with a copy to you" if answer.data.copy_to_me else ""
    return f"Invoice {invoice_id} sent to {answer.data.email}{copy}."


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
