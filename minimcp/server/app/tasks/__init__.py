"""The tasks extension (``io.modelcontextprotocol/tasks``) on the server.

``@mcp.tool(task=True)`` makes a tool's calls tasks for clients that declare the extension: the
call answers at once with a task handle, the body runs on a worker thread of its own pool, and the
client polls ``tasks/get``, answers questions with ``tasks/update`` and stops it with
``tasks/cancel``. ``manager.py`` runs tasks; ``store.py`` keeps them (``TaskStore``, and the
bounded in-memory default ``InMemoryTaskStore``); ``channel.py`` carries word between the processes
sharing a store (``TaskChannel``, and the one-process ``LocalTaskChannel``). Several processes
share ``RedisTaskStore`` (``redis_store.py``) and ``RedisTaskChannel`` (``redis_channel.py``),
which need redis-py (``pip install 'minimcp-sync[redis]'``) and are imported from their modules.
"""

from minimcp.server.app.tasks.channel import LocalTaskChannel, TaskChannel
from minimcp.server.app.tasks.manager import TaskManager
from minimcp.server.app.tasks.store import (
    InMemoryTaskStore,
    TaskExpired,
    TaskLimitReached,
    TaskNotFound,
    TaskRecord,
    TaskStore,
    TaskStoreUnavailable,
)

__all__ = [
    "InMemoryTaskStore",
    "LocalTaskChannel",
    "TaskChannel",
    "TaskExpired",
    "TaskLimitReached",
    "TaskManager",
    "TaskNotFound",
    "TaskRecord",
    "TaskStore",
    "TaskStoreUnavailable",
]
