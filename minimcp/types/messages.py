"""The messages each side sends, as the unions the official ``mcp.types`` names, and the typed
reading of a server's notification."""

from __future__ import annotations

import functools
from typing import Annotated, Any, TypeAlias, Union, get_args

from pydantic import Field, TypeAdapter

from minimcp.types.base import EmptyResult
from minimcp.types.completion import CompleteRequest, CompleteResult
from minimcp.types.elicitation import ElicitCompleteNotification, ElicitRequest, ElicitResult
from minimcp.types.lifecycle import (
    DiscoverRequest,
    DiscoverResult,
    InitializedNotification,
    InitializeRequest,
    InitializeResult,
    PingRequest,
)
from minimcp.types.listen import (
    SubscriptionsAcknowledgedNotification,
    SubscriptionsListenRequest,
    SubscriptionsListenResult,
)
from minimcp.types.logs import LoggingMessageNotification, SetLevelRequest
from minimcp.types.notifications import CancelledNotification, ProgressNotification
from minimcp.types.prompts import (
    GetPromptRequest,
    GetPromptResult,
    ListPromptsRequest,
    ListPromptsResult,
    PromptListChangedNotification,
)
from minimcp.types.resources import (
    ListResourcesRequest,
    ListResourcesResult,
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    ReadResourceRequest,
    ReadResourceResult,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    SubscribeRequest,
    UnsubscribeRequest,
)
from minimcp.types.roots import ListRootsRequest, ListRootsResult, RootsListChangedNotification
from minimcp.types.rounds import InputRequiredResult
from minimcp.types.sampling import CreateMessageRequest, CreateMessageResult, CreateMessageResultWithTools
from minimcp.types.tool_calls import CallToolRequest, CallToolResult
from minimcp.types.tools import ListToolsRequest, ListToolsResult, ToolListChangedNotification

ServerNotification: TypeAlias = Annotated[
    CancelledNotification
    | ProgressNotification
    | LoggingMessageNotification
    | ResourceUpdatedNotification
    | ResourceListChangedNotification
    | ToolListChangedNotification
    | PromptListChangedNotification
    | ElicitCompleteNotification
    | SubscriptionsAcknowledgedNotification,
    Field(discriminator="method"),
]

_SERVER_NOTIFICATION_METHODS = frozenset(
    model.model_fields["method"].default for model in get_args(get_args(ServerNotification)[0])
)


def parse_server_notification(data: dict[str, Any]) -> ServerNotification | None:
    """The typed notification for ``data``, or ``None`` if its method is not one we know.

    A known method with malformed params raises :class:`pydantic.ValidationError`.
    """
    if data.get("method") not in _SERVER_NOTIFICATION_METHODS:
        return None
    return _server_notification_adapter().validate_python(data)


@functools.cache
def _server_notification_adapter() -> TypeAdapter[ServerNotification]:
    """Built on first use, as every ``TypeAdapter`` of the wire unions: building them at import,
    together with the models they pull in, cost a tenth of ``import minimcp.server``."""
    return TypeAdapter(ServerNotification)


# The message unions the official ``mcp.types`` names, for annotations (both eras' members).
ClientRequest: TypeAlias = Union[
    PingRequest, InitializeRequest, CompleteRequest, SetLevelRequest, GetPromptRequest, ListPromptsRequest,
    ListResourcesRequest, ListResourceTemplatesRequest, ReadResourceRequest, SubscribeRequest, UnsubscribeRequest,
    CallToolRequest, ListToolsRequest, DiscoverRequest, SubscriptionsListenRequest,
]
ClientNotification: TypeAlias = Union[
    CancelledNotification, ProgressNotification, InitializedNotification, RootsListChangedNotification,
]
ClientResult: TypeAlias = Union[EmptyResult, CreateMessageResult, CreateMessageResultWithTools, ListRootsResult,
                                ElicitResult]
ServerRequest: TypeAlias = Union[PingRequest, CreateMessageRequest, ListRootsRequest, ElicitRequest]
ServerResult: TypeAlias = Union[
    EmptyResult, InitializeResult, DiscoverResult, CompleteResult, GetPromptResult, ListPromptsResult,
    ListResourcesResult, ListResourceTemplatesResult, ReadResourceResult, CallToolResult, ListToolsResult,
    SubscriptionsListenResult, InputRequiredResult,
]
