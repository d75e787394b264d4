"""What each side declares it can do: the client's and the server's capabilities."""

from __future__ import annotations

from typing import Any

from minimcp.types.base import MCPModel


class RootsCapability(MCPModel):
    list_changed: bool | None = None


class SamplingContextCapability(MCPModel):
    pass


class SamplingToolsCapability(MCPModel):
    pass


class SamplingCapability(MCPModel):
    context: SamplingContextCapability | None = None
    tools: SamplingToolsCapability | None = None


class FormElicitationCapability(MCPModel):
    pass


class UrlElicitationCapability(MCPModel):
    pass


class ElicitationCapability(MCPModel):
    """Declares elicitation; a bare ``{}`` (both modes ``None``) means form mode only."""

    form: FormElicitationCapability | None = None
    url: UrlElicitationCapability | None = None


class ClientCapabilities(MCPModel):
    experimental: dict[str, dict[str, Any]] | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None
    roots: RootsCapability | None = None
    extensions: dict[str, dict[str, Any]] | None = None


class PromptsCapability(MCPModel):
    list_changed: bool | None = None


class ResourcesCapability(MCPModel):
    subscribe: bool | None = None
    list_changed: bool | None = None


class ToolsCapability(MCPModel):
    list_changed: bool | None = None


class LoggingCapability(MCPModel):
    pass


class CompletionsCapability(MCPModel):
    pass


class ServerCapabilities(MCPModel):
    experimental: dict[str, dict[str, Any]] | None = None
    logging: LoggingCapability | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    completions: CompletionsCapability | None = None
    extensions: dict[str, dict[str, Any]] | None = None
