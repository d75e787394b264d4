"""Argument completion: ``completion/complete``, the prompt or template it completes for, and the
values it offers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from minimcp.types.base import MCPModel, RequestParams, Result


class PromptReference(MCPModel):
    type: Literal["ref/prompt"] = "ref/prompt"
    name: str
    title: str | None = None


class ResourceTemplateReference(MCPModel):
    type: Literal["ref/resource"] = "ref/resource"
    uri: str


class CompletionArgument(MCPModel):
    name: str
    value: str


class CompletionContext(MCPModel):
    arguments: dict[str, str] | None = None


class CompleteRequestParams(RequestParams):
    ref: Annotated[PromptReference | ResourceTemplateReference, Field(discriminator="type")]
    argument: CompletionArgument
    context: CompletionContext | None = None


class CompleteRequest(MCPModel):
    method: Literal["completion/complete"] = "completion/complete"
    params: CompleteRequestParams


class Completion(MCPModel):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    completion: Completion
    result_type: str | None = "complete"
