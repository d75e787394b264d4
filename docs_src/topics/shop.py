from minimcp import Client
from minimcp.server.mcpserver import MCPServer

mcp = MCPServer("shop")


@mcp.tool(tags={"admin"})
def wipe() -> str:
    return "wiped"


@mcp.tool(tags={"sales"})
def quote(item: str) -> str:
    return f"{item}: 3 EUR"


with Client(mcp) as client:
    mcp.disable(tags={"admin"})        # or mcp.disable("wipe"), mcp.disable("notes://{id}", kind="resource")
    print([tool.name for tool in client.list_tools().tools])   # ['quote']
    print(client.call_tool("wipe").content[0].text)            # Tool 'wipe' is disabled
    mcp.enable("wipe")                 # the later rule wins for what it names
    print(client.call_tool("wipe").content[0].text)            # wiped
