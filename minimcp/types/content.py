"""What messages carry: text, image and audio blocks, resources and their contents, the tool use
and tool result blocks of sampling, and the unions that admit them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from minimcp.types.base import BaseMetadata, Icon, MCPModel, Meta, Role


class Annotations(MCPModel):
    audience: list[Role] | None = None
    priority: Annotated[float, Field(ge=0, le=1)] | None = None
    last_modified: str | None = None


class TextContent(MCPModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ImageContent(MCPModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class AudioContent(MCPModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ResourceContents(MCPModel):
    uri: str
    mime_type: str | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class TextResourceContents(ResourceContents):
    text: str


class BlobResourceContents(ResourceContents):
    blob: str


class Resource(BaseMetadata):
    uri: str
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ResourceLink(Resource):
    type: Literal["resource_link"] = "resource_link"


class EmbeddedResource(MCPModel):
    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]


class ToolUseContent(MCPModel):
    type: Literal["tool_use"] = "tool_use"
    name: str
    id: str
    input: dict[str, Any]
    meta: Meta | None = Field(default=None, alias="_meta")


class ToolResultContent(MCPModel):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


SamplingContent: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent, Field(discriminator="type")
]
SamplingMessageContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent,
    Field(discriminator="type"),
]
