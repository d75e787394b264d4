"""``RedisTaskStore``: the tasks of every process of a deployment in one Redis (or Valkey).

The public path; the code lives in ``minimcp.server.app.tasks.redis_store``."""

from minimcp.server.app.tasks.redis_store import (
    RedisTaskStore,
    warn_if_unbounded,
)

__all__ = ["RedisTaskStore", "warn_if_unbounded"]
