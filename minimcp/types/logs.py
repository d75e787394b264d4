"""Logging: the levels, ``logging/setLevel`` and the log message notification."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from minimcp.types.base import MCPModel, NotificationParams, RequestParams

LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]


class SetLevelRequestParams(RequestParams):
    level: LoggingLevel


class SetLevelRequest(MCPModel):
    method: Literal["logging/setLevel"] = "logging/setLevel"
    params: SetLevelRequestParams


class LoggingMessageNotificationParams(NotificationParams):
    level: LoggingLevel
    logger: str | None = None
    data: Any


class LoggingMessageNotification(MCPModel):
    method: Literal["notifications/message"] = "notifications/message"
    params: LoggingMessageNotificationParams
