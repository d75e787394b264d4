"""The pet shop's API (examples/petstore_api.py) as MCP tools: one per GET or POST operation tagged
``pets``. The spec's URL may be given as the first argument; the API's token is in PET_TOKEN."""

import os
import sys

import requests

from minimcp.server import MCPServer

spec = sys.argv[1] if len(sys.argv) > 1 else "https://api.example.com/openapi.json"
session = requests.Session()
session.headers["Authorization"] = f"Bearer {os.environ.get('PET_TOKEN', 'pet-secret')}"

mcp = MCPServer.from_openapi(spec, session=session,  # or auth=AuthBase
                             tags=["pets"], methods=["GET", "POST"], timeout=10)

if __name__ == "__main__":
    mcp.run()  # stdio
