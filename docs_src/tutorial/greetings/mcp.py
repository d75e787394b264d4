"""The greetings app's tools: found at start-up, like admin.py, and run as the caller's user."""

from minimcp.django import mcp
from minimcp.server.mcpserver import Context


@mcp.tool()
def greet_me(ctx: Context) -> str:
    """Greet the signed-in user by name."""
    return f"Hello, {ctx.user.get_username()}!"
