"""What a legacy ``initialize`` answers with, and which ``list_changed`` notifications it announces."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from minimcp.types import Icon, ServerCapabilities

__all__ = ["InitializationOptions", "NotificationOptions"]


class NotificationOptions:
    """Which ``list_changed`` notifications a legacy server announces in its capabilities."""

    def __init__(self, prompts_changed: bool = False, resources_changed: bool = False,
                 tools_changed: bool = False) -> None:
        self.prompts_changed = prompts_changed
        self.resources_changed = resources_changed
        self.tools_changed = tools_changed


class InitializationOptions(BaseModel):
    """What a legacy ``initialize`` answers with: identity, capabilities, instructions."""

    model_config = ConfigDict(defer_build=True)

    server_name: str
    server_version: str
    title: str | None = None
    description: str | None = None
    capabilities: ServerCapabilities
    instructions: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None
