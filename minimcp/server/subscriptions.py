"""Publishing changes to ``subscriptions/listen`` streams (2026-07-28): the bus and the handler.

The public path; the code lives in ``minimcp.server.app.subscriptions``."""

from minimcp.server.app.subscriptions import (
    InMemorySubscriptionBus,
    Listener,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    SUBSCRIPTION_ID_META_KEY,
    SubscriptionBus,
    ToolsListChanged,
)

__all__ = ["InMemorySubscriptionBus", "Listener", "ListenHandler", "PromptsListChanged", "ResourcesListChanged", "ResourceUpdated", "ServerEvent", "SUBSCRIPTION_ID_META_KEY", "SubscriptionBus", "ToolsListChanged"]
