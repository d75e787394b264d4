"""Prompt registration under the official import path."""

from minimcp.server.mcpserver.prompts.base import AssistantMessage, Message, Prompt, UserMessage

__all__ = ["AssistantMessage", "Message", "Prompt", "UserMessage"]
