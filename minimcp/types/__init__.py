"""Pydantic models of the MCP wire messages, protocol revisions 2025-11-25 and 2026-07-28.

Each model carries the union of the fields both revisions define; which revision a field belongs
to is the session layer's business, not the model's. Python attributes are snake_case, the wire
is camelCase, ``_meta`` is the attribute ``meta``, and unknown keys are kept as they came.

Serialize with :func:`dump`, validate with ``Model.model_validate(data)``. The JSON-RPC envelope
(``jsonrpc``, ``id``) belongs to :mod:`minimcp.jsonrpc`; request and notification models here are
the ``{method, params}`` part (an envelope validated into one keeps ``jsonrpc``/``id`` as extras).

The package holds the wire models, a module per topic (``tools``, ``sampling``, ``rounds``...), and
this module names every public one: import them from here. The models know no layer of minimcp
and import nothing of it outside ``minimcp.types``: :mod:`minimcp.jsonrpc` builds on them (the
version an envelope carries, the error codes, ``ErrorData``), never the reverse.
``PaginatedRequest`` and the typed envelopes of :mod:`minimcp.types.jsonrpc` are made on first
use, as each builds a validator.
"""

from __future__ import annotations

import functools
from typing import Any, Generic, Optional

from minimcp.types.base import (
    BaseMetadata,
    CORE_RESULT_TYPES,
    CacheableResult,
    Cursor,
    EmptyResult,
    Icon,
    MCPModel,
    Meta,
    Notification,
    NotificationParams,
    PaginatedRequestParams,
    PaginatedResult,
    ProgressToken,
    Request,
    RequestId,
    RequestParams,
    RequestParamsMeta,
    Result,
    ResultType,
    Role,
    dump,
)
from minimcp.types.capabilities import (
    ClientCapabilities,
    CompletionsCapability,
    ElicitationCapability,
    FormElicitationCapability,
    LoggingCapability,
    PromptsCapability,
    ResourcesCapability,
    RootsCapability,
    SamplingCapability,
    SamplingContextCapability,
    SamplingToolsCapability,
    ServerCapabilities,
    ToolsCapability,
    UrlElicitationCapability,
)
from minimcp.types.lifecycle import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    DEFAULT_NEGOTIATED_VERSION,
    DiscoverRequest,
    DiscoverResult,
    HANDSHAKE_PROTOCOL_VERSIONS,
    Implementation,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    InitializedNotification,
    LATEST_HANDSHAKE_VERSION,
    LATEST_PROTOCOL_VERSION,
    LOG_LEVEL_META_KEY,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    PingRequest,
    SERVER_INFO_META_KEY,
)
from minimcp.types.content import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    Resource,
    ResourceContents,
    ResourceLink,
    SamplingContent,
    SamplingMessageContentBlock,
    TextContent,
    TextResourceContents,
    ToolResultContent,
    ToolUseContent,
)
from minimcp.types.tools import (
    ListToolsRequest,
    ListToolsResult,
    Tool,
    ToolAnnotations,
    ToolListChangedNotification,
)
from minimcp.types.resources import (
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    ListResourcesRequest,
    ListResourcesResult,
    ReadResourceRequest,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceListChangedNotification,
    ResourceTemplate,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    SubscribeRequest,
    SubscribeRequestParams,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
)
from minimcp.types.listen import (
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from minimcp.types.prompts import (
    GetPromptRequest,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsRequest,
    ListPromptsResult,
    Prompt,
    PromptArgument,
    PromptListChangedNotification,
    PromptMessage,
)
from minimcp.types.completion import (
    CompleteRequest,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)
from minimcp.types.logs import (
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    SetLevelRequest,
    SetLevelRequestParams,
)
from minimcp.types.notifications import (
    CancelledNotification,
    CancelledNotificationParams,
    ProgressNotification,
    ProgressNotificationParams,
)
from minimcp.types.sampling import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    IncludeContext,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    StopReason,
    ToolChoice,
)
from minimcp.types.roots import (
    ListRootsRequest,
    ListRootsResult,
    Root,
    RootsListChangedNotification,
)
from minimcp.types.elicitation import (
    BooleanSchema,
    ElicitCompleteNotification,
    ElicitCompleteNotificationParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitRequestedSchema,
    ElicitResult,
    EnumOption,
    LegacyTitledEnumSchema,
    NumberSchema,
    PrimitiveSchemaDefinition,
    StringSchema,
    TitledMultiSelectEnumSchema,
    TitledMultiSelectItems,
    TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema,
    UntitledMultiSelectItems,
    UntitledSingleSelectEnumSchema,
    parse_elicit_params,
)
from minimcp.types.errors import (
    CONNECTION_CLOSED,
    ElicitationRequiredErrorData,
    ErrorData,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MissingRequiredClientCapabilityErrorData,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    UnsupportedProtocolVersionErrorData,
)
from minimcp.types.rounds import (
    InputRequest,
    InputRequests,
    InputRequiredResult,
    InputResponse,
    InputResponseRequestParams,
    InputResponses,
    guess_input_response,
    parse_input_response,
)
from minimcp.types.tool_calls import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
)
from minimcp.types.messages import (
    ClientNotification,
    ClientRequest,
    ClientResult,
    ServerNotification,
    ServerRequest,
    ServerResult,
    parse_server_notification,
)
from minimcp.types.base import NotificationParamsT as NotificationParamsT
from minimcp.types.base import RequestParamsT as RequestParamsT
from minimcp.types.base import MethodT as MethodT

__all__ = [
    # Error codes
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "CONNECTION_CLOSED",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "HEADER_MISMATCH",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",

    # Protocol versions
    "LATEST_PROTOCOL_VERSION",
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "MODERN_PROTOCOL_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",

    # Reserved _meta keys (2026-07-28)
    "META_PROTOCOL_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",

    # Scalar aliases
    "RequestId",
    "ProgressToken",
    "LoggingLevel",
    "Role",
    "Cursor",
    "Meta",
    "RequestParamsMeta",

    # Base classes and serialization
    "MCPModel",
    "dump",
    "RequestParams",
    "PaginatedRequestParams",
    "InputResponseRequestParams",
    "NotificationParams",
    "Request",
    "Notification",
    "Result",
    "PaginatedResult",
    "CacheableResult",
    "EmptyResult",
    "ErrorData",

    # Identity
    "BaseMetadata",
    "Icon",
    "Implementation",

    # Capabilities
    "RootsCapability",
    "SamplingContextCapability",
    "SamplingToolsCapability",
    "SamplingCapability",
    "FormElicitationCapability",
    "UrlElicitationCapability",
    "ElicitationCapability",
    "ClientCapabilities",
    "PromptsCapability",
    "ResourcesCapability",
    "ToolsCapability",
    "LoggingCapability",
    "CompletionsCapability",
    "ServerCapabilities",

    # Lifecycle: initialize (legacy), server/discover (2026-07-28), ping
    "InitializeRequestParams",
    "InitializeRequest",
    "InitializeResult",
    "InitializedNotification",
    "PingRequest",
    "DiscoverRequest",
    "DiscoverResult",

    # Content
    "Annotations",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceContents",
    "TextResourceContents",
    "BlobResourceContents",
    "Resource",
    "ResourceLink",
    "EmbeddedResource",
    "ContentBlock",
    "ToolUseContent",
    "ToolResultContent",
    "SamplingContent",
    "SamplingMessageContentBlock",

    # Resources
    "ResourceTemplate",
    "ListResourcesRequest",
    "ListResourcesResult",
    "ListResourceTemplatesRequest",
    "ListResourceTemplatesResult",
    "ReadResourceRequestParams",
    "ReadResourceRequest",
    "ReadResourceResult",
    "SubscribeRequestParams",
    "SubscribeRequest",
    "UnsubscribeRequestParams",
    "UnsubscribeRequest",
    "ResourceUpdatedNotificationParams",
    "ResourceUpdatedNotification",
    "ResourceListChangedNotification",

    # Subscriptions (2026-07-28)
    "SubscriptionFilter",
    "SubscriptionsListenRequestParams",
    "SubscriptionsListenRequest",
    "SubscriptionsListenResult",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsAcknowledgedNotification",

    # Prompts
    "PromptArgument",
    "Prompt",
    "PromptMessage",
    "ListPromptsRequest",
    "ListPromptsResult",
    "GetPromptRequestParams",
    "GetPromptRequest",
    "GetPromptResult",
    "PromptListChangedNotification",

    # Tools
    "ToolAnnotations",
    "Tool",
    "ListToolsRequest",
    "ListToolsResult",
    "CallToolRequestParams",
    "CallToolRequest",
    "CallToolResult",
    "ToolListChangedNotification",

    # Completion
    "PromptReference",
    "ResourceTemplateReference",
    "CompletionArgument",
    "CompletionContext",
    "CompleteRequestParams",
    "CompleteRequest",
    "Completion",
    "CompleteResult",

    # Logging, progress, cancellation
    "SetLevelRequestParams",
    "SetLevelRequest",
    "LoggingMessageNotificationParams",
    "LoggingMessageNotification",
    "ProgressNotificationParams",
    "ProgressNotification",
    "CancelledNotificationParams",
    "CancelledNotification",

    # Sampling
    "SamplingMessage",
    "ModelHint",
    "ModelPreferences",
    "ToolChoice",
    "CreateMessageRequestParams",
    "CreateMessageRequest",
    "CreateMessageResult",
    "CreateMessageResultWithTools",

    # Roots
    "Root",
    "ListRootsRequest",
    "ListRootsResult",
    "RootsListChangedNotification",

    # Elicitation: requested-schema primitives
    "StringSchema",
    "NumberSchema",
    "BooleanSchema",
    "EnumOption",
    "UntitledSingleSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "UntitledMultiSelectItems",
    "UntitledMultiSelectEnumSchema",
    "TitledMultiSelectItems",
    "TitledMultiSelectEnumSchema",
    "LegacyTitledEnumSchema",
    "PrimitiveSchemaDefinition",

    # Elicitation
    "ElicitRequestFormParams",
    "ElicitRequestURLParams",
    "ElicitRequestParams",
    "parse_elicit_params",
    "ElicitRequest",
    "ElicitResult",
    "ElicitCompleteNotificationParams",
    "ElicitCompleteNotification",

    # Error data of the protocol's own errors
    "UnsupportedProtocolVersionErrorData",
    "MissingRequiredClientCapabilityErrorData",
    "ElicitationRequiredErrorData",

    # Multi-round-trip requests (2026-07-28)
    "InputRequest",
    "InputRequests",
    "InputResponse",
    "InputResponses",
    "parse_input_response",
    "guess_input_response",
    "InputRequiredResult",

    # Server-to-client notifications
    "ServerNotification",
    "parse_server_notification",

    # The official spellings, and the message unions `mcp.types` names
    "PROTOCOL_VERSION_META_KEY",
    "CLIENT_INFO_META_KEY",
    "CLIENT_CAPABILITIES_META_KEY",
    "LOG_LEVEL_META_KEY",
    "SERVER_INFO_META_KEY",
    "DEFAULT_NEGOTIATED_VERSION",
    "ResultType",
    "CORE_RESULT_TYPES",
    "IncludeContext",
    "StopReason",
    "ElicitRequestedSchema",
    "ClientRequest",
    "ClientNotification",
    "ClientResult",
    "ServerRequest",
    "ServerResult",
]


@functools.cache
def _paginated_request() -> type[Request[Any, Any]]:
    """``PaginatedRequest``, made on first use: parametrizing ``Request`` makes pydantic build its
    validator, and the first validator loads pydantic's plugins, a tenth of this package's import."""

    class PaginatedRequest(Request[Optional[PaginatedRequestParams], MethodT], Generic[MethodT]):
        """A listing request of your own: its params (a ``cursor``) may be left out."""

        params: PaginatedRequestParams | None = None

    PaginatedRequest.__qualname__ = "PaginatedRequest"
    return PaginatedRequest


_JSONRPC_MODELS = ("JSONRPCError", "JSONRPCMessage", "JSONRPCNotification", "JSONRPCRequest", "JSONRPCResponse",
                   "JSONRPC_VERSION", "jsonrpc_message_adapter")


def __getattr__(name: str) -> Any:
    """``PaginatedRequest`` and the JSON-RPC envelope models, which ``mcp.types`` also exports,
    built on first use."""
    if name == "PaginatedRequest":
        value = globals()[name] = _paginated_request()
        return value
    if name in _JSONRPC_MODELS:
        from minimcp.types import jsonrpc

        return getattr(jsonrpc, name)
    raise AttributeError(f"module 'minimcp.types' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "PaginatedRequest", *_JSONRPC_MODELS})
