"""An HTTP API described by OpenAPI 3, as MCP tools: one tool per operation.

The public path; the code lives in ``minimcp.server.app.openapi``."""

from minimcp.server.app.openapi import (
    add_openapi_tools,
    from_openapi,
    load_spec,
    MAX_ANSWER_BYTES,
    MAX_REDIRECTS,
    OperationFilter,
)

__all__ = ["add_openapi_tools", "from_openapi", "load_spec", "MAX_ANSWER_BYTES", "MAX_REDIRECTS", "OperationFilter"]
