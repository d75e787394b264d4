"""Extensions (SEP-2133): an opt-in bundle of behaviour under one reverse-DNS identifier.

The public path; the code lives in ``minimcp.server.app.extension``."""

from minimcp.server.app.extension import (
    compose_tool_call_handler,
    Extension,
    MethodBinding,
    RequestHandler,
    ResourceBinding,
    ToolBinding,
    validate_extension_identifier,
)

__all__ = ["compose_tool_call_handler", "Extension", "MethodBinding", "RequestHandler", "ResourceBinding", "ToolBinding", "validate_extension_identifier"]
