"""Prompts: a plain function whose arguments are named strings and whose result is messages.

The public path; the code lives in ``minimcp.server.app.prompts``."""

from minimcp.server.app.prompts import (
    AssistantMessage,
    Message,
    Prompt,
    UserMessage,
)

__all__ = ["AssistantMessage", "Message", "Prompt", "UserMessage"]
