"""The change events of ``subscriptions/listen`` (2026-07-28), as both sides name them.

A server publishes typed events on its bus and the client's ``listen()`` yields the same types, so
neither side's code spells a notification method. Every event is a level trigger ("this changed,
read it again if you care"): two equal events waiting to be consumed are one, which is what bounds
the buffers on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, Union, get_args

from minimcp.types import (
    META_SUBSCRIPTION_ID,
    NotificationParams,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    ServerNotification,
    SubscriptionFilter,
    ToolListChangedNotification,
)

#: The ``_meta`` key every frame of a listen stream carries: the listen request's JSON-RPC id.
SUBSCRIPTION_ID_META_KEY = META_SUBSCRIPTION_ID


@dataclass(frozen=True)
class ToolsListChanged:
    """The server's tool list changed."""


@dataclass(frozen=True)
class PromptsListChanged:
    """The server's prompt list changed."""


@dataclass(frozen=True)
class ResourcesListChanged:
    """The server's resource list changed."""


@dataclass(frozen=True)
class ResourceUpdated:
    """The resource at ``uri`` changed and may need to be read again."""

    uri: str


ServerEvent = Union[ToolsListChanged, PromptsListChanged, ResourcesListChanged, ResourceUpdated]
_SERVER_EVENT_TYPES: tuple[type, ...] = get_args(ServerEvent)


def is_server_event(value: object) -> TypeGuard[ServerEvent]:
    """``isinstance(value, ServerEvent)``, which a type checker refuses: a ``Union`` is not a class."""
    return isinstance(value, _SERVER_EVENT_TYPES)


_LIST_CHANGED: dict[str, ServerEvent] = {
    "notifications/tools/list_changed": ToolsListChanged(),
    "notifications/prompts/list_changed": PromptsListChanged(),
    "notifications/resources/list_changed": ResourcesListChanged(),
}
_RESOURCE_UPDATED = "notifications/resources/updated"

#: The notification methods that travel on listen streams (and, on 2026-07-28, nowhere else).
LISTEN_STREAM_METHODS: frozenset[str] = frozenset({*_LIST_CHANGED, _RESOURCE_UPDATED})


def event_method(event: ServerEvent) -> str:
    """The notification method that announces ``event``."""
    if isinstance(event, ResourceUpdated):
        return _RESOURCE_UPDATED
    return next(method for method, known in _LIST_CHANGED.items() if known == event)


def event_to_notification(event: ServerEvent, meta: dict[str, Any]) -> ServerNotification:
    """The notification model announcing ``event``, its ``_meta`` set to ``meta``."""
    if isinstance(event, ResourceUpdated):
        return ResourceUpdatedNotification(params=ResourceUpdatedNotificationParams(uri=event.uri, _meta=meta))
    model = {ToolsListChanged: ToolListChangedNotification, PromptsListChanged: PromptListChangedNotification,
             ResourcesListChanged: ResourceListChangedNotification}[type(event)]
    return model(params=NotificationParams(_meta=meta))


def event_from_wire(method: str, params: Mapping[str, Any] | None) -> ServerEvent | None:
    """The event a received notification announces, or ``None`` when it announces none."""
    event = _LIST_CHANGED.get(method)
    if event is not None:
        return event
    uri = (params or {}).get("uri") if method == _RESOURCE_UPDATED else None
    return ResourceUpdated(uri=uri) if isinstance(uri, str) else None


def event_matches(honored: SubscriptionFilter, uris: frozenset[str], event: ServerEvent) -> bool:
    """Whether ``event`` is inside an acknowledged filter (``uris``: its resource URIs as a set)."""
    if isinstance(event, ResourceUpdated):
        return event.uri in uris
    if isinstance(event, ToolsListChanged):
        return honored.tools_list_changed is True
    if isinstance(event, PromptsListChanged):
        return honored.prompts_list_changed is True
    return honored.resources_list_changed is True


__all__ = [
    "LISTEN_STREAM_METHODS",
    "SUBSCRIPTION_ID_META_KEY",
    "PromptsListChanged",
    "ResourceUpdated",
    "ResourcesListChanged",
    "ServerEvent",
    "ToolsListChanged",
    "event_from_wire",
    "event_matches",
    "event_method",
    "event_to_notification",
    "is_server_event",
]
