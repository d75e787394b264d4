"""Notes whose readers hear every change: ``python notes_subscriptions.py`` serves them at
http://127.0.0.1:8000/mcp; ``follow(url)`` prints the to-do note each time a tool changes it."""

from minimcp import Client
from minimcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("notes")
notes = {"todo": "buy bread"}


@mcp.resource("note://{name}")
def note(name: str) -> str:
    return notes[name]


@mcp.tool()
def edit_note(name: str, text: str, ctx: Context) -> str:
    notes[name] = text
    ctx.notify_resource_updated(f"note://{name}")   # both eras (notify_tools_changed(): 2026-07-28 listens only)
    return "saved"


def follow(url: str) -> None:
    with Client(url) as client, client.listen(resource_subscriptions=["note://todo"]) as sub:
        for event in sub:                                # ResourceUpdated(uri='note://todo'), ...
            print(client.read_resource(event.uri))


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
