"""The exports server with its tasks alone shared through Redis, on a Redis client of your own."""

import os

import redis

from minimcp.server import MCPServer
from minimcp.server.tasks.redis_channel import RedisTaskChannel
from minimcp.server.tasks.redis_store import RedisTaskStore

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379/0"), socket_timeout=10)
mcp = MCPServer("exports", task_store=RedisTaskStore(client), task_channel=RedisTaskChannel(client))
