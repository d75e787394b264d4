"""minimcp: the Model Context Protocol for synchronous Python.

Tools are plain functions, calls run on worker threads, and HTTP is served by a WSGI app, so MCP
fits into Flask/Django-era code and plain scripts without an event loop::

    from minimcp.server import MCPServer

    mcp = MCPServer("Demo")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    mcp.run(transport="streamable-http")

Names are imported lazily so that ``import minimcp`` stays cheap for command-line tools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from minimcp._version import __version__

_EXPORTS = {
    "Client": "minimcp.client",
    "ClientSession": "minimcp.client.session",
    "ClientSessionGroup": "minimcp.client.session_group",
    "InputRequiredRoundsExceededError": "minimcp.client",
    "TaskCancelledError": "minimcp.client",
    "TaskHandle": "minimcp.client",
    "StdioServerParameters": "minimcp.client.stdio",
    "stdio_client": "minimcp.client.stdio",
    "MCPError": "minimcp.jsonrpc",
    "UrlElicitationRequiredError": "minimcp.jsonrpc",
    "MCPDeprecationWarning": "minimcp.shared.exceptions",
    "UriTemplate": "minimcp.shared.uri_template",
    "InvalidUriTemplate": "minimcp.shared.uri_template",
    "ServerSession": "minimcp.server.session",
    "stdio_server": "minimcp.server.edges.stdio",
    "create_proxy": "minimcp.server.app.proxy",
}

#: The protocol models the official package re-exports at its top level, served from ``minimcp.types``.
_TYPE_EXPORTS = (
    "CallToolRequest", "ClientCapabilities", "CompleteRequest", "IncludeContext", "JSONRPCError", "JSONRPCRequest",
    "JSONRPCResponse", "StopReason", "CreateMessageRequest", "CreateMessageResult",
    "CreateMessageResultWithTools", "ErrorData", "GetPromptRequest", "GetPromptResult", "Implementation",
    "InitializeRequest", "InitializeResult", "InitializedNotification", "ListPromptsRequest", "ListPromptsResult",
    "ListResourcesRequest", "ListResourcesResult", "ListToolsResult", "LoggingLevel", "LoggingMessageNotification",
    "PingRequest", "ProgressNotification", "PromptsCapability", "ReadResourceRequest", "ReadResourceResult",
    "Resource", "ResourcesCapability", "ResourceUpdatedNotification", "RootsCapability", "SamplingCapability",
    "SamplingContent", "SamplingContextCapability", "SamplingMessage", "SamplingMessageContentBlock",
    "SamplingToolsCapability", "ServerCapabilities", "ServerNotification", "SetLevelRequest", "SubscribeRequest",
    "Tool", "ToolChoice", "ToolResultContent", "ToolsCapability", "ToolUseContent", "UnsubscribeRequest",
    "ClientNotification", "ClientRequest", "ClientResult", "Notification", "ServerRequest", "ServerResult",
)
_EXPORTS.update(dict.fromkeys(_TYPE_EXPORTS, "minimcp.types"))
#: Names the official package exports under another name than ``mcp.types`` gives them.
_RENAMED = {"SamplingRole": "Role"}
_EXPORTS.update(dict.fromkeys(_RENAMED, "minimcp.types"))

__all__ = [*_EXPORTS, "types"]

if TYPE_CHECKING:
    from minimcp import types
    from minimcp.client import Client, InputRequiredRoundsExceededError, TaskCancelledError, TaskHandle
    from minimcp.client.session import ClientSession
    from minimcp.client.session_group import ClientSessionGroup
    from minimcp.client.stdio import StdioServerParameters, stdio_client
    from minimcp.jsonrpc import MCPError, UrlElicitationRequiredError
    from minimcp.server.session import ServerSession
    from minimcp.server.edges.stdio import stdio_server
    from minimcp.server.app.proxy import create_proxy
    from minimcp.shared.exceptions import MCPDeprecationWarning
    from minimcp.shared.uri_template import InvalidUriTemplate, UriTemplate


def __getattr__(name: str) -> Any:
    if name == "types":
        return importlib.import_module("minimcp.types")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'minimcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value
