"""Pydantic models of the MCP wire messages, protocol revisions 2025-11-25 and 2026-07-28.

Each model carries the union of the fields both revisions define; which revision a field belongs
to is the session layer's business, not the model's. Python attributes are snake_case, the wire
is camelCase, ``_meta`` is the attribute ``meta``, and unknown keys are kept as they came.

Serialize with :func:`dump`, validate with ``Model.model_validate(data)``. The JSON-RPC envelope
(``jsonrpc``, ``id``) belongs to :mod:`minimcp.jsonrpc`; request and notification models here are
the ``{method, params}`` part (an envelope validated into one keeps ``jsonrpc``/``id`` as extras).
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Any, ClassVar, Generic, Literal, Optional, TypeAlias, TypeVar, Union, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

# --- Error codes -----------------------------------------------------------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
URL_ELICITATION_REQUIRED = -32042

# --- Protocol versions -----------------------------------------------------------------------

LATEST_PROTOCOL_VERSION = "2026-07-28"
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE_VERSION = "2025-11-25"

# --- Reserved _meta keys (2026-07-28) ----------------------------------------------------------

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# --- Scalar aliases --------------------------------------------------------------------------

RequestId: TypeAlias = str | int
ProgressToken: TypeAlias = str | int
LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
Role: TypeAlias = Literal["user", "assistant"]
Cursor: TypeAlias = str

# A `_meta` object. Its keys are wire names kept verbatim ("progressToken", the reserved
# "io.modelcontextprotocol/..." keys above): it is a dict, so nothing camel-cases it.
Meta: TypeAlias = dict[str, Any]
RequestParamsMeta: TypeAlias = Meta


# --- Base classes and serialization ----------------------------------------------------------


class MCPModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True)


def dump(model: BaseModel) -> dict[str, Any]:
    """The wire form of ``model``: camelCase keys, ``_meta``, no ``None`` fields, JSON values.

    The serializer is called as pydantic's ``model_dump`` calls it, without that method's Python
    frame (a quarter of the cost of dumping a small result, paid on every answer); a model that
    overrides ``model_dump`` gets its own."""
    if type(model).model_dump is not BaseModel.model_dump:
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model.__pydantic_serializer__.to_python(model, by_alias=True, exclude_none=True, mode="json")


class RequestParams(MCPModel):
    meta: RequestParamsMeta | None = Field(default=None, alias="_meta")


class PaginatedRequestParams(RequestParams):
    cursor: Cursor | None = None


class InputResponseRequestParams(RequestParams):
    """The params of a request a server may answer with ``input_required`` (2026-07-28): the client
    sends it again with the answers and the state it was handed."""

    input_responses: InputResponses | None = None
    request_state: str | None = None


class NotificationParams(MCPModel):
    meta: Meta | None = Field(default=None, alias="_meta")


RequestParamsT = TypeVar("RequestParamsT", bound=Union[RequestParams, dict[str, Any], None])
NotificationParamsT = TypeVar("NotificationParamsT", bound=Union[NotificationParams, dict[str, Any], None])
MethodT = TypeVar("MethodT", bound=str)


class Request(MCPModel, Generic[RequestParamsT, MethodT]):
    """A request's ``{method, params}``; subclass it for a vendor method of your own
    (``class SearchRequest(Request[SearchParams, Literal["acme/search"]])``) and send it with
    ``session.send_request(SearchRequest(...), SearchResult)``."""

    method: MethodT
    params: RequestParamsT

    name_param: ClassVar[str | None] = None
    """The params key (its wire name) whose value the client sends as the ``Mcp-Name`` header, as the
    core methods send their target's name: a subclass sets it by plain assignment (``name_param =
    "jobId"``), and sending a request whose params lack that string is a ``ValueError``."""


@functools.cache
def _paginated_request() -> type[Request[Any, Any]]:
    """``PaginatedRequest``, made on first use: parametrizing ``Request`` makes pydantic build its
    validator, and the first validator loads pydantic's plugins, a tenth of this module's import."""

    class PaginatedRequest(Request[Optional[PaginatedRequestParams], MethodT], Generic[MethodT]):
        """A listing request of your own: its params (a ``cursor``) may be left out."""

        params: PaginatedRequestParams | None = None

    PaginatedRequest.__qualname__ = "PaginatedRequest"
    return PaginatedRequest


class Notification(MCPModel, Generic[NotificationParamsT, MethodT]):
    """A notification's ``{method, params}``, the counterpart of :class:`Request`."""

    method: MethodT
    params: NotificationParamsT


class Result(MCPModel):
    """Base of every result.

    ``result_type`` is declared by each result that has one, last among its fields as officially
    (printed and dumped in the official order): ``"complete"`` on the results of the core requests
    (the server strips it from the legacy wire), ``None`` on ``EmptyResult`` (it dumps as ``{}``),
    and ``"input_required"`` on :class:`InputRequiredResult`; the answers a client gives (an
    ``ElicitResult``, a ``CreateMessageResult``...) and ``InitializeResult`` have none.
    """

    meta: Meta | None = Field(default=None, alias="_meta")

    @field_validator("result_type", check_fields=False)
    @classmethod
    def _only_input_required_result_is_input_required(cls, value: str | None) -> str | None:
        # Without this, an input_required answer would validate as, say, an empty CallToolResult.
        if value == "input_required" and not issubclass(cls, InputRequiredResult):
            raise ValueError(
                f"an input_required result is an InputRequiredResult, not {cls.__name__}"
            )
        return value


class PaginatedResult(Result):
    next_cursor: Cursor | None = None


class CacheableResult(Result):
    """A result the client may cache (2026-07-28, where both fields are required on the wire).

    The defaults are the official SDK's: immediately stale and private, so a handler that says
    nothing never enables shared caching by accident (``cache_hints=`` on the server changes them
    per method). Like ``result_type``, they stay off the legacy wire.
    """

    ttl_ms: Annotated[int, Field(ge=0)] = 0
    cache_scope: Literal["public", "private"] = "private"


class EmptyResult(Result):
    """Success without data: ``{}``, or ``{"resultType": "complete"}`` on 2026-07-28."""

    result_type: str | None = None


class ErrorData(MCPModel):
    code: int
    message: str
    data: Any = None


# --- Identity --------------------------------------------------------------------------------


class BaseMetadata(MCPModel):
    name: str
    title: str | None = None


class Icon(MCPModel):
    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


class Implementation(BaseMetadata):
    version: str
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


# --- Capabilities ----------------------------------------------------------------------------


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


# --- Lifecycle: initialize (legacy), server/discover (2026-07-28), ping ------------------------


class InitializeRequestParams(RequestParams):
    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


class InitializeRequest(MCPModel):
    method: Literal["initialize"] = "initialize"
    params: InitializeRequestParams


class InitializeResult(Result):
    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None


class InitializedNotification(MCPModel):
    method: Literal["notifications/initialized"] = "notifications/initialized"
    params: NotificationParams | None = None


class PingRequest(MCPModel):
    method: Literal["ping"] = "ping"
    params: RequestParams | None = None


class DiscoverRequest(MCPModel):
    method: Literal["server/discover"] = "server/discover"
    params: RequestParams | None = None


class DiscoverResult(CacheableResult):
    """The server's identity travels in ``_meta`` under :data:`META_SERVER_INFO`."""

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None
    result_type: str | None = "complete"


# --- Content ---------------------------------------------------------------------------------


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


# --- Resources -------------------------------------------------------------------------------


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


# --- Subscriptions (2026-07-28) --------------------------------------------------------------


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


# --- Prompts ---------------------------------------------------------------------------------


class PromptArgument(BaseMetadata):
    description: str | None = None
    required: bool | None = None


class Prompt(BaseMetadata):
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class PromptMessage(MCPModel):
    role: Role
    content: ContentBlock


class ListPromptsRequest(MCPModel):
    method: Literal["prompts/list"] = "prompts/list"
    params: PaginatedRequestParams | None = None


class ListPromptsResult(PaginatedResult, CacheableResult):
    prompts: list[Prompt]
    result_type: str | None = "complete"


class GetPromptRequestParams(InputResponseRequestParams):
    name: str
    arguments: dict[str, str] | None = None


class GetPromptRequest(MCPModel):
    method: Literal["prompts/get"] = "prompts/get"
    params: GetPromptRequestParams


class GetPromptResult(Result):
    description: str | None = None
    messages: list[PromptMessage]
    result_type: str | None = "complete"


class PromptListChangedNotification(MCPModel):
    method: Literal["notifications/prompts/list_changed"] = "notifications/prompts/list_changed"
    params: NotificationParams | None = None


# --- Tools -----------------------------------------------------------------------------------


class ToolAnnotations(MCPModel):
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(BaseMetadata):
    """A tool definition.

    ``input_schema`` and ``output_schema`` are plain dicts so they pass through byte-for-byte
    (``$schema``, ``$defs``, ``$ref``, ``x-mcp-header`` and every other keyword untouched).
    """

    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    icons: list[Icon] | None = None
    annotations: ToolAnnotations | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ListToolsRequest(MCPModel):
    method: Literal["tools/list"] = "tools/list"
    params: PaginatedRequestParams | None = None


class ListToolsResult(PaginatedResult, CacheableResult):
    tools: list[Tool]
    result_type: str | None = "complete"


class CallToolRequestParams(InputResponseRequestParams):
    name: str
    arguments: dict[str, Any] | None = None


class CallToolRequest(MCPModel):
    method: Literal["tools/call"] = "tools/call"
    params: CallToolRequestParams


class CallToolResult(Result):
    content: list[ContentBlock] = Field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    result_type: str | None = "complete"


class ToolListChangedNotification(MCPModel):
    method: Literal["notifications/tools/list_changed"] = "notifications/tools/list_changed"
    params: NotificationParams | None = None


# --- Completion ------------------------------------------------------------------------------


class PromptReference(MCPModel):
    type: Literal["ref/prompt"] = "ref/prompt"
    name: str
    title: str | None = None


class ResourceTemplateReference(MCPModel):
    type: Literal["ref/resource"] = "ref/resource"
    uri: str


class CompletionArgument(MCPModel):
    name: str
    value: str


class CompletionContext(MCPModel):
    arguments: dict[str, str] | None = None


class CompleteRequestParams(RequestParams):
    ref: Annotated[PromptReference | ResourceTemplateReference, Field(discriminator="type")]
    argument: CompletionArgument
    context: CompletionContext | None = None


class CompleteRequest(MCPModel):
    method: Literal["completion/complete"] = "completion/complete"
    params: CompleteRequestParams


class Completion(MCPModel):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    completion: Completion
    result_type: str | None = "complete"


# --- Logging, progress, cancellation ---------------------------------------------------------


class SetLevelRequestParams(RequestParams):
    level: LoggingLevel


class SetLevelRequest(MCPModel):
    method: Literal["logging/setLevel"] = "logging/setLevel"
    params: SetLevelRequestParams


class LoggingMessageNotificationParams(NotificationParams):
    level: LoggingLevel
    logger: str | None = None
    data: Any


class LoggingMessageNotification(MCPModel):
    method: Literal["notifications/message"] = "notifications/message"
    params: LoggingMessageNotificationParams


class ProgressNotificationParams(NotificationParams):
    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None


class ProgressNotification(MCPModel):
    method: Literal["notifications/progress"] = "notifications/progress"
    params: ProgressNotificationParams


class CancelledNotificationParams(NotificationParams):
    request_id: RequestId | None = None
    reason: str | None = None


class CancelledNotification(MCPModel):
    method: Literal["notifications/cancelled"] = "notifications/cancelled"
    params: CancelledNotificationParams


# --- Sampling --------------------------------------------------------------------------------


class SamplingMessage(MCPModel):
    role: Role
    content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]
    meta: Meta | None = Field(default=None, alias="_meta")


class ModelHint(MCPModel):
    name: str | None = None


class ModelPreferences(MCPModel):
    hints: list[ModelHint] | None = None
    cost_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    speed_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    intelligence_priority: Annotated[float, Field(ge=0, le=1)] | None = None


class ToolChoice(MCPModel):
    mode: Literal["auto", "required", "none"] | None = None


class CreateMessageRequestParams(RequestParams):
    # pydantic < 2.10 reserves the "model_" prefix and would warn about model_preferences.
    model_config = ConfigDict(protected_namespaces=())

    messages: list[SamplingMessage]
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    max_tokens: int
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageRequest(MCPModel):
    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


class CreateMessageResult(Result):
    """A sampling answer with one text, image or audio block.

    The schema's ``CreateMessageResult`` also allows tool use and arrays of blocks; those
    answers are :class:`CreateMessageResultWithTools`.
    """

    role: Role
    content: SamplingContent
    model: str
    stop_reason: str | None = None


class CreateMessageResultWithTools(Result):
    role: Role
    content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]
    model: str
    stop_reason: str | None = None


# --- Roots -----------------------------------------------------------------------------------


def _url_to_str(value: Any) -> Any:
    # A pydantic URL exists only once pydantic.networks is imported, which this module leaves to
    # whoever makes one: importing it costs a tenth of ``import minimcp.types``.
    networks = sys.modules.get("pydantic.networks")
    return str(value) if networks is not None and isinstance(value, networks.AnyUrl) else value


class Root(MCPModel):
    # A str (not FileUrl) so the URI round-trips unnormalized; pydantic URL objects are accepted.
    uri: Annotated[str, BeforeValidator(_url_to_str)]
    name: str | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ListRootsRequest(MCPModel):
    method: Literal["roots/list"] = "roots/list"
    params: dict[str, Any] | None = None


class ListRootsResult(Result):
    roots: list[Root]


class RootsListChangedNotification(MCPModel):
    method: Literal["notifications/roots/list_changed"] = "notifications/roots/list_changed"
    params: NotificationParams | None = None


# --- Elicitation: requested-schema primitives ------------------------------------------------


class StringSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: Literal["date", "date-time", "email", "uri"] | None = None
    default: str | None = None


class NumberSchema(MCPModel):
    type: Literal["number", "integer"]
    title: str | None = None
    description: str | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    default: int | float | None = None


class BooleanSchema(MCPModel):
    type: Literal["boolean"] = "boolean"
    title: str | None = None
    description: str | None = None
    default: bool | None = None


class EnumOption(MCPModel):
    const: str
    title: str


class UntitledSingleSelectEnumSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    default: str | None = None


class TitledSingleSelectEnumSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    one_of: list[EnumOption]
    default: str | None = None


class UntitledMultiSelectItems(MCPModel):
    type: Literal["string"] = "string"
    enum: list[str]


class UntitledMultiSelectEnumSchema(MCPModel):
    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: UntitledMultiSelectItems
    default: list[str] | None = None


class TitledMultiSelectItems(MCPModel):
    any_of: list[EnumOption]


class TitledMultiSelectEnumSchema(MCPModel):
    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: TitledMultiSelectItems
    default: list[str] | None = None


class LegacyTitledEnumSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    enum_names: list[str] | None = None
    default: str | None = None


def _primitive_schema_kind(value: Any) -> str | None:
    """Which PrimitiveSchemaDefinition a property is; several share ``type: "string"``."""
    if isinstance(value, BaseModel):
        return _PRIMITIVE_SCHEMA_KIND_BY_CLASS.get(type(value))
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind in ("number", "integer"):
        return "number"
    if kind == "array":
        items = value.get("items")
        return "titled-multi" if isinstance(items, dict) and "anyOf" in items else "untitled-multi"
    if kind == "string":
        if "oneOf" in value:
            return "titled-single"
        if "enumNames" in value:
            return "legacy-titled"
        return "untitled-single" if "enum" in value else "string"
    return kind if kind == "boolean" else None


_PRIMITIVE_SCHEMA_KIND_BY_CLASS: dict[type[BaseModel], str] = {
    StringSchema: "string",
    NumberSchema: "number",
    BooleanSchema: "boolean",
    UntitledSingleSelectEnumSchema: "untitled-single",
    TitledSingleSelectEnumSchema: "titled-single",
    UntitledMultiSelectEnumSchema: "untitled-multi",
    TitledMultiSelectEnumSchema: "titled-multi",
    LegacyTitledEnumSchema: "legacy-titled",
}

PrimitiveSchemaDefinition: TypeAlias = Annotated[
    Union[
        Annotated[StringSchema, Tag("string")],
        Annotated[NumberSchema, Tag("number")],
        Annotated[BooleanSchema, Tag("boolean")],
        Annotated[UntitledSingleSelectEnumSchema, Tag("untitled-single")],
        Annotated[TitledSingleSelectEnumSchema, Tag("titled-single")],
        Annotated[UntitledMultiSelectEnumSchema, Tag("untitled-multi")],
        Annotated[TitledMultiSelectEnumSchema, Tag("titled-multi")],
        Annotated[LegacyTitledEnumSchema, Tag("legacy-titled")],
    ],
    Discriminator(_primitive_schema_kind),
]

# --- Elicitation -----------------------------------------------------------------------------


class ElicitRequestFormParams(RequestParams):
    """Form mode. ``requested_schema`` is a plain dict, passed through untouched."""

    mode: Literal["form"] = "form"
    message: str
    requested_schema: dict[str, Any]


class ElicitRequestURLParams(RequestParams):
    """URL mode. ``elicitation_id`` is required on 2025-11-25 and absent on 2026-07-28."""

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None


def _elicit_mode(value: Any) -> str | None:
    # The spec says a missing mode MUST be treated as "form" (it predates URL mode).
    if isinstance(value, dict):
        mode = value.get("mode", "form")
    else:
        mode = getattr(value, "mode", None)
    return mode if isinstance(mode, str) else None


ElicitRequestParams: TypeAlias = Annotated[
    Union[
        Annotated[ElicitRequestFormParams, Tag("form")],
        Annotated[ElicitRequestURLParams, Tag("url")],
    ],
    Discriminator(_elicit_mode),
]

def parse_elicit_params(data: dict[str, Any]) -> ElicitRequestFormParams | ElicitRequestURLParams:
    """Validate ``elicitation/create`` params by ``mode``; a missing ``mode`` is form mode."""
    return _adapter("elicitation/create params").validate_python(data)


class ElicitRequest(MCPModel):
    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


class ElicitResult(Result):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str] | None] | None = None


class ElicitCompleteNotificationParams(NotificationParams):
    elicitation_id: str


class ElicitCompleteNotification(MCPModel):
    method: Literal["notifications/elicitation/complete"] = "notifications/elicitation/complete"
    params: ElicitCompleteNotificationParams


# --- Error data of the protocol's own errors -------------------------------------------------


class UnsupportedProtocolVersionErrorData(MCPModel):
    supported: list[str]
    requested: str


class MissingRequiredClientCapabilityErrorData(MCPModel):
    required_capabilities: ClientCapabilities


class ElicitationRequiredErrorData(MCPModel):
    elicitations: list[ElicitRequestURLParams]


# --- Multi-round-trip requests (2026-07-28) --------------------------------------------------

InputRequest: TypeAlias = Annotated[
    CreateMessageRequest | ListRootsRequest | ElicitRequest, Field(discriminator="method")
]
InputRequests: TypeAlias = dict[str, InputRequest]

# Not discriminated: the wire carries no tag. The server parses each answer by the method of the
# request it answers (see parse_input_response); validating against this union is a best guess.
InputResponse: TypeAlias = (
    CreateMessageResult | CreateMessageResultWithTools | ListRootsResult | ElicitResult
)
InputResponses: TypeAlias = dict[str, InputResponse]

_INPUT_RESPONSES: dict[str, Any] = {
    "sampling/createMessage": CreateMessageResult | CreateMessageResultWithTools,
    "roots/list": ListRootsResult,
    "elicitation/create": ElicitResult,
}


def parse_input_response(method: str, data: Any) -> InputResponse:
    """Validate a client's answer to the input request of ``method`` (``KeyError`` if unknown)."""
    return _adapter(method).validate_python(data)


def guess_input_response(data: Any) -> InputResponse | Any:
    """An answer typed by its shape alone, as ``ctx.input_responses`` hands it to a handler that
    built its own ``InputRequiredResult`` (and so knows which question each key asked); an answer
    no model fits is returned as it came."""
    try:
        return _adapter("input response").validate_python(data)
    except ValidationError:
        return data


class InputRequiredResult(Result):
    result_type: Literal["input_required"] = "input_required"
    input_requests: InputRequests | None = None
    request_state: str | None = None

    @model_validator(mode="after")
    def _requires_requests_or_state(self) -> InputRequiredResult:
        if self.input_requests is None and self.request_state is None:
            raise ValueError(
                "InputRequiredResult requires at least one of input_requests or request_state"
            )
        return self


# --- Server-to-client notifications ----------------------------------------------------------

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
    return _adapter("server notification").validate_python(data)


#: The wire unions validated with a ``TypeAdapter``, by name: an input request's method for the
#: answers ``parse_input_response`` reads, else a name of their own.
_ADAPTED: dict[str, Any] = {
    **_INPUT_RESPONSES,
    "elicitation/create params": ElicitRequestParams,
    "server notification": ServerNotification,
    # Tried in this order, each needing a field the others lack: action, roots, then sampling.
    "input response": Annotated[
        ElicitResult | ListRootsResult | CreateMessageResult | CreateMessageResultWithTools,
        Field(union_mode="left_to_right"),
    ],
}


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """The ``TypeAdapter`` of one of ``_ADAPTED``, built on first use: building them at import,
    together with the models they pull in, cost a tenth of ``import minimcp.server``."""
    return TypeAdapter(_ADAPTED[name])


# --- The official spellings of names defined above -------------------------------------------
# (``mcp.types`` exports these; ported code imports them by these names.)

PROTOCOL_VERSION_META_KEY = META_PROTOCOL_VERSION
CLIENT_INFO_META_KEY = META_CLIENT_INFO
CLIENT_CAPABILITIES_META_KEY = META_CLIENT_CAPABILITIES
LOG_LEVEL_META_KEY = META_LOG_LEVEL
SERVER_INFO_META_KEY = META_SERVER_INFO
#: The version a legacy peer is assumed to speak when it never said (the official default).
DEFAULT_NEGOTIATED_VERSION = "2025-03-26"
ResultType: TypeAlias = Union[Literal["complete", "input_required"], str]
CORE_RESULT_TYPES: frozenset[str] = frozenset({"complete", "input_required"})
IncludeContext: TypeAlias = Literal["none", "thisServer", "allServers"]
StopReason: TypeAlias = Union[Literal["endTurn", "stopSequence", "maxTokens", "toolUse"], str]
#: The JSON Schema object an elicitation asks with (``requestedSchema``).
ElicitRequestedSchema: TypeAlias = dict[str, Any]

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
