"""Call the first tool from a client, in memory: no sockets, no subprocess."""

from first_tool import mcp

from minimcp import Client

with Client(mcp) as client:
    print([tool.name for tool in client.list_tools().tools])
    print(client.call_tool("add", {"a": 1, "b": 2}).structured_content)
