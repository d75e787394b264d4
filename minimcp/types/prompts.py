"""Prompts: their definitions, ``prompts/list``, ``prompts/get`` and the change notification."""

from __future__ import annotations

from typing import Literal

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
    Result,
    Role,
)
from minimcp.types.content import ContentBlock
from minimcp.types.rounds import InputResponseRequestParams


class PromptArgument(BaseMetadata):
    description: str | None = None
    required: bool | None = None


class Prompt(BaseMetadata):
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class PromptMessage(MCPModel):
    role: Role
    content: ContentBlock


class ListPromptsRequest(MCPModel):
    method: Literal["prompts/list"] = "prompts/list"
    params: PaginatedRequestParams | None = None


class ListPromptsResult(PaginatedResult, CacheableResult):
    prompts: list[Prompt]
    result_type: str | None = "complete"


class GetPromptRequestParams(InputResponseRequestParams):
    name: str
    arguments: dict[str, str] | None = None


class GetPromptRequest(MCPModel):
    method: Literal["prompts/get"] = "prompts/get"
    params: GetPromptRequestParams


class GetPromptResult(Result):
    description: str | None = None
    messages: list[PromptMessage]
    result_type: str | None = "complete"


class PromptListChangedNotification(MCPModel):
    method: Literal["notifications/prompts/list_changed"] = "notifications/prompts/list_changed"
    params: NotificationParams | None = None
