"""Sampling: ``sampling/createMessage``, which a server sends a client to have its model answer, and
the answers.

The request may offer the model tools, which is why the tool definitions (``minimcp.types.tools``)
sit below this module and ``tools/call`` (``minimcp.types.tool_calls``) above it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, Union

from pydantic import ConfigDict, Field

from minimcp.types.base import MCPModel, Meta, RequestParams, Result, Role
from minimcp.types.content import SamplingContent, SamplingMessageContentBlock
from minimcp.types.tools import Tool

IncludeContext: TypeAlias = Literal["none", "thisServer", "allServers"]
StopReason: TypeAlias = Union[Literal["endTurn", "stopSequence", "maxTokens", "toolUse"], str]


class SamplingMessage(MCPModel):
    role: Role
    content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]
    meta: Meta | None = Field(default=None, alias="_meta")


class ModelHint(MCPModel):
    name: str | None = None


class ModelPreferences(MCPModel):
    hints: list[ModelHint] | None = None
    cost_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    speed_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    intelligence_priority: Annotated[float, Field(ge=0, le=1)] | None = None


class ToolChoice(MCPModel):
    mode: Literal["auto", "required", "none"] | None = None


class CreateMessageRequestParams(RequestParams):
    # pydantic < 2.10 reserves the "model_" prefix and would warn about model_preferences.
    model_config = ConfigDict(protected_namespaces=())

    messages: list[SamplingMessage]
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    max_tokens: int
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageRequest(MCPModel):
    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


class CreateMessageResult(Result):
    """A sampling answer with one text, image or audio block.

    The schema's ``CreateMessageResult`` also allows tool use and arrays of blocks; those
    answers are :class:`CreateMessageResultWithTools`.
    """

    role: Role
    content: SamplingContent
    model: str
    stop_reason: str | None = None


class CreateMessageResultWithTools(Result):
    role: Role
    content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]
    model: str
    stop_reason: str | None = None
