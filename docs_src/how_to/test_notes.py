"""Testing a server with pytest and the in-memory client: the real protocol, no sockets."""

import pytest

from minimcp import Client
from minimcp.server import MCPServer

mcp = MCPServer("Notes")
notes: list[str] = []


@mcp.tool()
def add_note(text: str) -> int:
    """Keep a note; returns how many there are."""
    notes.append(text)
    return len(notes)


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # both protocol eras
def test_add_note(mode: str) -> None:
    notes.clear()
    with Client(mcp, mode=mode) as client:
        assert client.call_tool("add_note", {"text": "milk"}).structured_content == {"result": 1}
        assert client.call_tool("add_note", {"text": "eggs"}).structured_content == {"result": 2}
    assert notes == ["milk", "eggs"]
