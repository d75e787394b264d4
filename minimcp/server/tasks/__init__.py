"""The tasks extension (``io.modelcontextprotocol/tasks``) on the server.

``@mcp.tool(task=True)`` makes a tool's calls tasks for clients that declare the extension: the
call answers at once with a task handle, the body runs on a worker thread of its own pool, and the
client polls ``tasks/get``, answers questions with ``tasks/update`` and stops it with
``tasks/cancel``. ``manager.py`` runs tasks; ``store.py`` keeps them (``TaskStore``, and the
bounded in-memory default ``InMemoryTaskStore``).
"""

from minimcp.server.tasks.manager import TaskManager
from minimcp.server.tasks.store import (
    InMemoryTaskStore,
    TaskExpired,
    TaskLimitReached,
    TaskNotFound,
    TaskRecord,
    TaskStore,
)

__all__ = [
    "InMemoryTaskStore",
    "TaskExpired",
    "TaskLimitReached",
    "TaskManager",
    "TaskNotFound",
    "TaskRecord",
    "TaskStore",
]
