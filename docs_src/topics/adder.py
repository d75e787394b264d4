import minimcp.types as types
from minimcp import Client
from minimcp.server import Server, ServerRequestContext
from minimcp.shared.exceptions import MCPError

ADD = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}


def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name="add", description="Add two numbers.", input_schema=ADD)])


def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "add":
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    total = params.arguments["a"] + params.arguments["b"]
    return types.CallToolResult(content=[types.TextContent(text=str(total))], structured_content={"total": total})


server = Server("adder", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    with Client(server) as client:  # in memory; server.run() serves stdio
        print(client.call_tool("add", {"a": 1, "b": 2}).content[0].text)
