"""The seed page's URL-mode example, made synchronous: send the user to a payment page.

Run it with ``python examples/deposit_server.py`` (Streamable HTTP on http://127.0.0.1:8000/mcp).
"""

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("Bistro")


@mcp.tool()
def pay_deposit(booking_id: str, ctx: Context) -> str:
    """Take the deposit that confirms a booking."""
    result = ctx.elicit_url(
        message="A 20 EUR deposit confirms your booking.",
        url=f"https://pay.example.com/deposit/{booking_id}",
        elicitation_id=f"deposit-{booking_id}",
    )
    if result.action == "accept":
        return "Complete the payment in your browser."
    return "No deposit taken. The booking expires in one hour."


@mcp.tool()
def confirm_deposit(booking_id: str, ctx: Context) -> str:
    """Record a payment reported by the payment provider."""
    ctx.session.send_elicit_complete(f"deposit-{booking_id}")
    return f"Deposit received for booking {booking_id}."


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
