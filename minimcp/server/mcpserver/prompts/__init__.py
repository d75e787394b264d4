"""Prompt registration under the official import path."""

from minimcp.server.app.prompts import AssistantMessage, Message, Prompt, UserMessage

__all__ = ["AssistantMessage", "Message", "Prompt", "UserMessage"]
