"""The tasks extension (``io.modelcontextprotocol/tasks``) on the server.

The public path; the code lives in ``minimcp.server.app.tasks``."""

from minimcp.server.app.tasks import (
    InMemoryTaskStore,
    LocalTaskChannel,
    TaskChannel,
    TaskExecutor,
    TaskExpired,
    TaskLimitReached,
    TaskManager,
    TaskNotFound,
    TaskRecord,
    TaskStore,
    TaskStoreUnavailable,
)

__all__ = ["InMemoryTaskStore", "LocalTaskChannel", "TaskChannel", "TaskExecutor", "TaskExpired", "TaskLimitReached", "TaskManager", "TaskNotFound", "TaskRecord", "TaskStore", "TaskStoreUnavailable"]
