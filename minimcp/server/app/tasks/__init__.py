"""The tasks extension (``io.modelcontextprotocol/tasks``) on the server.

``@mcp.tool(task=True)`` makes a tool's calls tasks for clients that declare the extension: the
call answers at once with a task handle, the body runs on a worker thread of its own pool, and the
client polls ``tasks/get``, answers questions with ``tasks/update`` and stops it with
``tasks/cancel``. ``manager.py`` runs tasks; ``store.py`` keeps them in one process (the bounded
``InMemoryTaskStore``); ``channel.py`` is the one-process ``LocalTaskChannel``. What a store and a
channel promise (``TaskStore``, ``TaskChannel``, ``TaskRecord``) are ports of the core
(``minimcp.server.core.ports``). Several processes share ``RedisTaskStore`` and
``RedisTaskChannel`` (``minimcp.server.backends``), which need redis-py
(``pip install 'minimcp-sync[redis]'``) and are imported from their modules
(``minimcp.server.tasks.redis_store``, ``minimcp.server.tasks.redis_channel``). Bodies run on this
process's own pool unless a ``TaskExecutor`` takes them: ``CeleryExecutor``
(``minimcp.server.tasks.celery``, ``pip install 'minimcp-sync[celery]'``) runs them on the
application's Celery workers, where they outlive the web process; ``jobs.py`` is what travels there.
"""

from minimcp.server.app.tasks.channel import LocalTaskChannel
from minimcp.server.app.tasks.manager import TaskManager
from minimcp.server.app.tasks.store import InMemoryTaskStore
from minimcp.server.core.faults import TaskExpired, TaskLimitReached, TaskNotFound, TaskStoreUnavailable
from minimcp.server.core.ports import TaskChannel, TaskExecutor, TaskRecord, TaskStore

__all__ = [
    "InMemoryTaskStore",
    "LocalTaskChannel",
    "TaskChannel",
    "TaskExecutor",
    "TaskExpired",
    "TaskLimitReached",
    "TaskManager",
    "TaskNotFound",
    "TaskRecord",
    "TaskStore",
    "TaskStoreUnavailable",
]
