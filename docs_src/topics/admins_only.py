"""The shop's admin tools, shown only to callers whose access token carries the ``admin`` scope."""

from typing import Any

from minimcp import Client
from minimcp.server.mcpserver import Context, MCPServer


def admins_only(ctx: Context, component: Any) -> bool:
    token = ctx.access_token
    return "admin" not in component.tags or (token is not None and "admin" in token.scopes)


mcp = MCPServer("shop", component_filter=admins_only)


@mcp.tool(tags={"admin"})
def wipe() -> str:
    return "wiped"


@mcp.tool(tags={"sales"})
def quote(item: str) -> str:
    return f"{item}: 3 EUR"


if __name__ == "__main__":
    with Client(mcp) as client:                                  # in memory: no token, so no admin
        print([tool.name for tool in client.list_tools().tools])   # ['quote']
        print(client.call_tool("wipe").content[0].text)            # Unknown tool: wipe
