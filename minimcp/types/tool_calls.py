"""Calling a tool: ``tools/call``, whose params may carry the answers of an input-required round."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from minimcp.types.base import MCPModel, Result
from minimcp.types.content import ContentBlock
from minimcp.types.rounds import InputResponseRequestParams


class CallToolRequestParams(InputResponseRequestParams):
    name: str
    arguments: dict[str, Any] | None = None


class CallToolRequest(MCPModel):
    method: Literal["tools/call"] = "tools/call"
    params: CallToolRequestParams


class CallToolResult(Result):
    content: list[ContentBlock] = Field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    result_type: str | None = "complete"
