"""``CeleryExecutor``: task bodies on the application's own Celery workers (``pip install 'minimcp-sync[celery]'``).

The public path; the code lives in ``minimcp.server.app.tasks.celery``."""

from minimcp.server.app.tasks.celery import (
    TASK_NAME,
    CeleryExecutor,
)

__all__ = ["TASK_NAME", "CeleryExecutor"]
