"""Prompt messages under the official import path."""

from minimcp.server.prompts import AssistantMessage, Message, Prompt, UserMessage

__all__ = ["AssistantMessage", "Message", "Prompt", "UserMessage"]
