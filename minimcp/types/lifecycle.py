"""How a session starts and who is at each end: the protocol revisions, the peers' identities,
``initialize`` (legacy), ``server/discover`` and the reserved ``_meta`` keys (2026-07-28), ``ping``."""

from __future__ import annotations

from typing import Literal

from minimcp.types.base import (
    BaseMetadata,
    CacheableResult,
    Icon,
    MCPModel,
    NotificationParams,
    RequestParams,
    Result,
)
from minimcp.types.capabilities import ClientCapabilities, ServerCapabilities

LATEST_PROTOCOL_VERSION = "2026-07-28"
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE_VERSION = "2025-11-25"
#: The version a legacy peer is assumed to speak when it never said (the official default).
DEFAULT_NEGOTIATED_VERSION = "2025-03-26"

# The reserved _meta keys (2026-07-28): each request carries what the handshake settled before.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# Their official spellings (``mcp.types`` exports these; ported code imports them by these names).
PROTOCOL_VERSION_META_KEY = META_PROTOCOL_VERSION
CLIENT_INFO_META_KEY = META_CLIENT_INFO
CLIENT_CAPABILITIES_META_KEY = META_CLIENT_CAPABILITIES
LOG_LEVEL_META_KEY = META_LOG_LEVEL
SERVER_INFO_META_KEY = META_SERVER_INFO


class Implementation(BaseMetadata):
    version: str
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


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
