"""``MCPServer`` and its decorators at the official import path ``mcp.server.mcpserver``.

The code lives in ``minimcp.server.app``; this package and its modules only re-export.
"""

from minimcp.server.app.server import MCPServer, require_client_extension
from minimcp.server.app.context import Context
from minimcp.server.app.elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
    UrlElicitationResult,
)
from minimcp.server.app.media import Audio, Image
from minimcp.server.app.prompts import AssistantMessage, Message, UserMessage
from minimcp.server.app.resolve import Elicit, ListRoots, Sample
from minimcp.server.app.signature import Resolve
from minimcp.server.app.resources import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from minimcp.types import Icon
from minimcp.server.core.sealing import (
    HMACRequestStateCodec,
    InvalidRequestState,
    RequestStateCodec,
    RequestStateSecurity,
)

__all__ = [
    "DEFAULT_RESOURCE_SECURITY",
    "AcceptedElicitation",
    "AcceptedUrlElicitation",
    "AssistantMessage",
    "Audio",
    "CancelledElicitation",
    "Context",
    "DeclinedElicitation",
    "Elicit",
    "ElicitationResult",
    "HMACRequestStateCodec",
    "Icon",
    "Image",
    "InvalidRequestState",
    "ListRoots",
    "MCPServer",
    "Message",
    "RequestStateCodec",
    "RequestStateSecurity",
    "Resolve",
    "ResourceSecurity",
    "Sample",
    "UrlElicitationResult",
    "UserMessage",
    "require_client_extension",
]
