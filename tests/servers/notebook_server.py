"""A notebook whose edits reach ``subscriptions/listen`` streams, for tests/test_subscriptions.py.

``python tests/servers/notebook_server.py`` serves the ``MCPServer`` version on stdio;
``python tests/servers/notebook_server.py lowlevel`` the low-level ``Server`` with a ``ListenHandler``.
"""

from __future__ import annotations

import sys
from typing import Any

import minimcp.types as types
from minimcp.server import MCPServer, Server, ServerRequestContext
from minimcp.server.mcpserver import Context
from minimcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, SubscriptionBus, ToolsListChanged


def notebook(subscriptions: SubscriptionBus | None = None) -> MCPServer[Any]:
    mcp: MCPServer[Any] = MCPServer("notebook", subscriptions=subscriptions)
    notes = {"todo": "buy milk", "journal": "day one"}

    @mcp.resource("note://{name}")
    def note(name: str) -> str:
        return notes[name]

    @mcp.tool()
    def edit_note(name: str, text: str, ctx: Context) -> str:
        """Replace a note's text and tell subscribers that URI changed."""
        notes[name] = text
        ctx.notify_resource_updated(f"note://{name}")
        return "saved"

    @mcp.tool()
    def enable_search(ctx: Context) -> str:
        """Register the search tool and tell subscribers the tool list changed."""
        def search(query: str) -> list[str]:
            return [name for name, text in notes.items() if query in text]

        mcp.add_tool(search)
        ctx.notify_tools_changed()
        return "search is live"

    return mcp


_EDIT = {"type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
         "required": ["name", "text"]}


def lowlevel_notebook(bus: InMemorySubscriptionBus | None = None, **listen_options: Any) -> Server[Any]:
    """The same notebook held by hand: the handlers publish on ``bus``, a ``ListenHandler`` serves it."""
    bus = bus or InMemorySubscriptionBus()
    notes = {"todo": "buy milk", "journal": "day one"}
    searching: list[bool] = []

    def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [types.Tool(name="edit_note", input_schema=_EDIT),
                 types.Tool(name="enable_search", input_schema={"type": "object"})]
        if searching:
            tools.append(types.Tool(name="search", input_schema={"type": "object"}))
        return types.ListToolsResult(tools=tools)

    def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "edit_note":
            notes[args["name"]] = args["text"]
            bus.publish(ResourceUpdated(uri=f"note://{args['name']}"))
            return types.CallToolResult(content=[types.TextContent(text="saved")])
        searching.append(True)
        bus.publish(ToolsListChanged())
        return types.CallToolResult(content=[types.TextContent(text="search is live")])

    return Server("notebook", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_subscriptions_listen=ListenHandler(bus, **listen_options))


if __name__ == "__main__":
    server = lowlevel_notebook() if sys.argv[1:] == ["lowlevel"] else notebook()
    server.run(transport="stdio")
