"""``RedisTaskStore``: the tasks of every process of a deployment in one Redis (or Valkey).

The public path; the code lives in ``minimcp.server.backends.redis_tasks``."""

from minimcp.server.backends.redis_tasks import (
    RedisTaskStore,
    warn_if_unbounded,
)

__all__ = ["RedisTaskStore", "warn_if_unbounded"]
