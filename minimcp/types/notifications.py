"""The two notifications about a request in flight, which either side sends: its progress and its
cancellation. Every other notification is with its topic."""

from __future__ import annotations

from typing import Literal

from minimcp.types.base import MCPModel, NotificationParams, ProgressToken, RequestId


class ProgressNotificationParams(NotificationParams):
    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None


class ProgressNotification(MCPModel):
    method: Literal["notifications/progress"] = "notifications/progress"
    params: ProgressNotificationParams


class CancelledNotificationParams(NotificationParams):
    request_id: RequestId | None = None
    reason: str | None = None


class CancelledNotification(MCPModel):
    method: Literal["notifications/cancelled"] = "notifications/cancelled"
    params: CancelledNotificationParams
