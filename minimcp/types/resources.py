"""Resources: templates, ``resources/list``, ``resources/templates/list`` and ``resources/read``,
subscribing to one resource's updates, and the notifications of a change.

A resource itself and its contents are content (:mod:`minimcp.types.content`): a message may link
or embed one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from minimcp.types.base import (
    BaseMetadata,
    CacheableResult,
    Icon,
    MCPModel,
    Meta,
    NotificationParams,
    PaginatedRequestParams,
    PaginatedResult,
    RequestParams,
)
from minimcp.types.content import Annotations, BlobResourceContents, Resource, TextResourceContents
from minimcp.types.rounds import InputResponseRequestParams


class ResourceTemplate(BaseMetadata):
    uri_template: str
    description: str | None = None
    mime_type: str | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ListResourcesRequest(MCPModel):
    method: Literal["resources/list"] = "resources/list"
    params: PaginatedRequestParams | None = None


class ListResourcesResult(PaginatedResult, CacheableResult):
    resources: list[Resource]
    result_type: str | None = "complete"


class ListResourceTemplatesRequest(MCPModel):
    method: Literal["resources/templates/list"] = "resources/templates/list"
    params: PaginatedRequestParams | None = None


class ListResourceTemplatesResult(PaginatedResult, CacheableResult):
    resource_templates: list[ResourceTemplate]
    result_type: str | None = "complete"


class ReadResourceRequestParams(InputResponseRequestParams):
    uri: str


class ReadResourceRequest(MCPModel):
    method: Literal["resources/read"] = "resources/read"
    params: ReadResourceRequestParams


class ReadResourceResult(CacheableResult):
    contents: list[TextResourceContents | BlobResourceContents]
    result_type: str | None = "complete"


class SubscribeRequestParams(RequestParams):
    uri: str


class SubscribeRequest(MCPModel):
    method: Literal["resources/subscribe"] = "resources/subscribe"
    params: SubscribeRequestParams


class UnsubscribeRequestParams(RequestParams):
    uri: str


class UnsubscribeRequest(MCPModel):
    method: Literal["resources/unsubscribe"] = "resources/unsubscribe"
    params: UnsubscribeRequestParams


class ResourceUpdatedNotificationParams(NotificationParams):
    uri: str


class ResourceUpdatedNotification(MCPModel):
    method: Literal["notifications/resources/updated"] = "notifications/resources/updated"
    params: ResourceUpdatedNotificationParams


class ResourceListChangedNotification(MCPModel):
    method: Literal["notifications/resources/list_changed"] = (
        "notifications/resources/list_changed"
    )
    params: NotificationParams | None = None
