"""Publishing changes to ``subscriptions/listen`` streams (2026-07-28): the bus and the handler.

The public path; the code lives in ``minimcp.server.core.ports`` (the bus), ``minimcp.server.core.in_process``
(the in-process bus), ``minimcp.server.app.subscriptions`` (the handler) and ``minimcp.shared.subscriptions``
(the events)."""

from minimcp.server.app.subscriptions import ListenHandler
from minimcp.server.core.in_process import InMemorySubscriptionBus
from minimcp.server.core.ports import Listener, SubscriptionBus
from minimcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

__all__ = ["InMemorySubscriptionBus", "Listener", "ListenHandler", "PromptsListChanged", "ResourcesListChanged", "ResourceUpdated", "ServerEvent", "SUBSCRIPTION_ID_META_KEY", "SubscriptionBus", "ToolsListChanged"]
