"""``RedisTaskChannel``: the ``TaskChannel`` of processes sharing one Redis, over its pub/sub.

The public path; the code lives in ``minimcp.server.app.tasks.redis_channel``."""

from minimcp.server.app.tasks.redis_channel import (
    RedisTaskChannel,
)

__all__ = ["RedisTaskChannel"]
