"""``CeleryExecutor``: task bodies on the application's own Celery workers (``pip install 'minimcp-sync[celery]'``).

The public path; the code lives in ``minimcp.server.backends.celery_tasks``."""

from minimcp.server.backends.celery_tasks import (
    TASK_NAME,
    CeleryExecutor,
)

__all__ = ["TASK_NAME", "CeleryExecutor"]
