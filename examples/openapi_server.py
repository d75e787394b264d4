"""Any HTTP API with an OpenAPI 3 document, as an MCP server: one tool per operation.

    python examples/petstore_api.py --port 8080 &
    python examples/openapi_server.py http://127.0.0.1:8080/openapi.json --token pet-secret --tag pets

Serves MCP on http://127.0.0.1:8000/mcp (``--port 0`` picks a free port and prints it). ``--token``
sends ``Authorization: Bearer`` with every call; ``--tag`` and ``--operation`` choose operations.
"""

from __future__ import annotations

import argparse

import requests

from minimcp.server import MCPServer


def build(spec: str, token: str | None = None, tags: list[str] | None = None,
          operations: list[str] | None = None) -> MCPServer:
    session = requests.Session()
    if token:
        session.headers["Authorization"] = f"Bearer {token}"
    return MCPServer.from_openapi(spec, session=session, timeout=10, tags=tags or None,
                                  operation_ids=operations or None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Serve an OpenAPI 3 API's operations as MCP tools.")
    parser.add_argument("spec", help="URL or path of the JSON OpenAPI document")
    parser.add_argument("--token", help="a bearer token the API accepts")
    parser.add_argument("--tag", action="append", help="only operations with this tag (repeatable)")
    parser.add_argument("--operation", action="append", help="only this operationId (repeatable)")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    options = parser.parse_args()
    build(options.spec, options.token, options.tag, options.operation).run(transport="streamable-http",
                                                                           port=options.port)
