from typing import Literal

import minimcp.types as types
from minimcp import Client
from minimcp.client import advertise
from minimcp.server.extension import Extension, MethodBinding
from minimcp.server.mcpserver import MCPServer, require_client_extension


class SearchParams(types.RequestParams):
    query: str


class SearchResult(types.Result):
    items: list[str]


class SearchRequest(types.Request[SearchParams, Literal["com.example/search"]]):
    method: Literal["com.example/search"] = "com.example/search"
    params: SearchParams


def search(ctx, params: SearchParams) -> SearchResult:
    require_client_extension(ctx, "com.example/catalog")  # -32021 to a client that did not declare it
    return SearchResult(items=[f"{params.query}-1", f"{params.query}-2"])


class Catalog(Extension):
    identifier = "com.example/catalog"

    def methods(self):
        return [MethodBinding("com.example/search", SearchParams, search)]


mcp = MCPServer("catalog", extensions=[Catalog()])

with Client(mcp, extensions=[advertise("com.example/catalog")]) as client:
    print(client.session.send_request(SearchRequest(params=SearchParams(query="mcp")), SearchResult).items)
