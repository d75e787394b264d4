"""``subscriptions/listen`` (2026-07-28): what a client listens for, the server's acknowledgement,
and the result that ends the stream."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from minimcp.types.base import MCPModel, Meta, NotificationParams, RequestParams, Result


class SubscriptionFilter(MCPModel):
    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


class SubscriptionsListenRequestParams(RequestParams):
    notifications: SubscriptionFilter


class SubscriptionsListenRequest(MCPModel):
    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: SubscriptionsListenRequestParams


class SubscriptionsListenResult(Result):
    """Ends a listen stream; ``_meta`` must carry :data:`META_SUBSCRIPTION_ID`."""
    result_type: str | None = "complete"

    meta: Meta = Field(alias="_meta")


class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    notifications: SubscriptionFilter


class SubscriptionsAcknowledgedNotification(MCPModel):
    method: Literal["notifications/subscriptions/acknowledged"] = (
        "notifications/subscriptions/acknowledged"
    )
    params: SubscriptionsAcknowledgedNotificationParams
