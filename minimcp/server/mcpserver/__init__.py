"""The high-level server API under the official import path ``mcp.server.mcpserver``."""

from minimcp.server.app import MCPServer
from minimcp.server.context import Context
from minimcp.server.elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
    UrlElicitationResult,
)
from minimcp.server.media import Audio, Image
from minimcp.server.prompts import AssistantMessage, Message, UserMessage
from minimcp.server.resolve import Elicit, ListRoots, Resolve, Sample
from minimcp.server.rounds import (
    HMACRequestStateCodec,
    InvalidRequestState,
    RequestStateCodec,
    RequestStateSecurity,
)

__all__ = [
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
    "Image",
    "InvalidRequestState",
    "ListRoots",
    "MCPServer",
    "Message",
    "RequestStateCodec",
    "RequestStateSecurity",
    "Resolve",
    "Sample",
    "UrlElicitationResult",
    "UserMessage",
]
