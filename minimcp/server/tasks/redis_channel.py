"""``RedisTaskChannel``: the ``TaskChannel`` of processes sharing one Redis, over its pub/sub.

The public path; the code lives in ``minimcp.server.backends.redis_task_channel``."""

from minimcp.server.backends.redis_task_channel import (
    RedisTaskChannel,
)

__all__ = ["RedisTaskChannel"]
