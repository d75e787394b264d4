"""What a tool is: its definition and annotations, ``tools/list`` and its change notification.

Calling one (``tools/call``) is :mod:`minimcp.types.tool_calls`: sampling offers tools to the model
(a ``Tool`` here), and a tool call may ask the client to sample, so the two halves sit on either
side of the input-required rounds (:mod:`minimcp.types.rounds`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from minimcp.types.base import (
    BaseMetadata,
    CacheableResult,
    Icon,
    MCPModel,
    Meta,
    NotificationParams,
    PaginatedRequestParams,
    PaginatedResult,
)


class ToolAnnotations(MCPModel):
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(BaseMetadata):
    """A tool definition.

    ``input_schema`` and ``output_schema`` are plain dicts so they pass through byte-for-byte
    (``$schema``, ``$defs``, ``$ref``, ``x-mcp-header`` and every other keyword untouched).
    """

    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    icons: list[Icon] | None = None
    annotations: ToolAnnotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ListToolsRequest(MCPModel):
    method: Literal["tools/list"] = "tools/list"
    params: PaginatedRequestParams | None = None


class ListToolsResult(PaginatedResult, CacheableResult):
    tools: list[Tool]
    result_type: str | None = "complete"


class ToolListChangedNotification(MCPModel):
    method: Literal["notifications/tools/list_changed"] = "notifications/tools/list_changed"
    params: NotificationParams | None = None
