from typing import Literal

import minimcp.types as types
from minimcp import Client
from minimcp.client import ClaimContext, ClientExtension, ResultClaim
from minimcp.server.lowlevel import Server


class Pending(types.Result):
    result_type: Literal["com.example/pending"] = "com.example/pending"
    ticket: str


def on_call_tool(ctx, params: types.CallToolRequestParams):
    if params.name == "book":
        return Pending(ticket="t-1")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"booked {params.arguments['ticket']}")])


def redeem(result: Pending, ctx: ClaimContext) -> types.CallToolResult:
    return ctx.session.call_tool("redeem", {"ticket": result.ticket})


class Tickets(ClientExtension):
    identifier = "com.example/tickets"

    def claims(self):
        return [ResultClaim(result_type="com.example/pending", model=Pending, resolve=redeem)]


server = Server("tickets", on_call_tool=on_call_tool)

with Client(server, extensions=[Tickets()]) as client:
    print(client.call_tool("book").content[0].text)
