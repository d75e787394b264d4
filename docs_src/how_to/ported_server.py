"""A server as the official SDK's quickstart writes it, with minimcp imported in place of mcp."""

from minimcp.server import MCPServer

mcp = MCPServer("Demo")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    mcp.run()  # stdio
