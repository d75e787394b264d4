"""Prompts: a plain function whose arguments are named strings and whose result is messages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field

from minimcp.server.app.media import Audio, Image
from minimcp.server.app.signature import argument_values, arguments_model, model_stem, read_signature, require_sync
from minimcp.server.app.tools import to_content
from minimcp.server.app.visibility import as_tags
from minimcp.types import ContentBlock, GetPromptResult, InputRequiredResult, PromptArgument, PromptMessage, TextContent
from minimcp.types import Prompt as PromptDefinition


class Message(BaseModel):
    """One prompt message; ``content`` may be given as a ``str``, a content block, ``Image`` or ``Audio``."""

    model_config = ConfigDict(defer_build=True)

    role: Literal["user", "assistant"]
    content: ContentBlock

    def __init__(self, content: str | ContentBlock | Image | Audio, **kwargs: Any) -> None:
        if isinstance(content, (str, Image, Audio)):
            content = to_content(content)[0]
        super().__init__(content=content, **kwargs)


class UserMessage(Message):
    role: Literal["user", "assistant"] = "user"

    def __init__(self, content: str | ContentBlock | Image | Audio, **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)


class AssistantMessage(Message):
    role: Literal["user", "assistant"] = "assistant"

    def __init__(self, content: str | ContentBlock | Image | Audio, **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)


def _to_prompt_message(item: Any) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, Message):
        return PromptMessage(role=item.role, content=item.content)
    if isinstance(item, dict):
        return PromptMessage.model_validate(item)
    if isinstance(item, str):
        return PromptMessage(role="user", content=TextContent(type="text", text=item))
    return PromptMessage(role="user", content=TextContent(
        type="text", text=pydantic_core.to_json(item, fallback=str, indent=2).decode()))


class Prompt(BaseModel):
    """A registered prompt template."""

    model_config = ConfigDict(defer_build=True)

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = Field(default_factory=list)
    icons: list[Any] | None = None
    fn: Callable[..., Any] = Field(exclude=True)
    context_params: list[str] = Field(default_factory=list, exclude=True)
    arguments_model: Any = Field(default=None, exclude=True)
    tags: frozenset[str] = Field(default_factory=frozenset, exclude=True)

    @classmethod
    def from_function(cls, fn: Callable[..., Any], name: str | None = None, title: str | None = None,
                      description: str | None = None, icons: list[Any] | None = None,
                      tags: Iterable[str] | None = None) -> Prompt:
        name = name or fn.__name__
        if name == "<lambda>":
            raise ValueError("You must provide a name for lambda functions")
        require_sync(fn, name)
        params = read_signature(fn, name)
        model = arguments_model(f"{model_stem(fn, name)}Arguments", params.arguments)
        arguments = [
            PromptArgument(name=field.alias or key, description=field.description, required=field.is_required())
            for key, field in model.model_fields.items()
        ]
        return cls(name=name, title=title, description=description or fn.__doc__ or "",
                   arguments=arguments, icons=icons, fn=fn, context_params=params.context, arguments_model=model,
                   tags=as_tags(tags))

    def definition(self) -> PromptDefinition:
        return PromptDefinition(name=self.name, title=self.title, description=self.description,
                                arguments=self.arguments, icons=self.icons)

    def render(self, arguments: dict[str, str] | None, ctx: Any) -> GetPromptResult | InputRequiredResult:
        arguments = arguments or {}
        missing = {a.name for a in self.arguments if a.required and a.name not in arguments}
        if missing:
            raise ValueError(f"Missing required arguments: {missing}")
        values = argument_values(self.arguments_model.model_validate(arguments))
        for param in self.context_params:
            values[param] = ctx
        result = self.fn(**values)
        if isinstance(result, (GetPromptResult, InputRequiredResult)):
            return result
        items = result if isinstance(result, (list, tuple)) else [result]
        return GetPromptResult(description=self.description, messages=[_to_prompt_message(i) for i in items])
