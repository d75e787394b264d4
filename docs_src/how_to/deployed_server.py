"""A server every process of a deployment shares through Redis: any process answers any request."""

import os

from minimcp.server import MCPServer

mcp = MCPServer("Notes", backend=os.environ.get("REDIS_URL", "redis://localhost:6379/0"))  # or RedisBackend(redis_client)


@mcp.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


app = mcp.wsgi_app()  # what gunicorn serves: server:app
