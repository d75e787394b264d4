"""The exports server with everything shared through Redis, tasks included: any process of the
deployment answers tasks/get, tasks/update and tasks/cancel."""

import os

from minimcp.server import MCPServer

mcp = MCPServer("exports", backend=os.environ.get("REDIS_URL", "redis://localhost:6379/0"))   # sessions, tasks, everything shared
