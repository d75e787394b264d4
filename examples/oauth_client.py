"""A script that talks to an OAuth-protected MCP server: the browser opens, you sign in, it runs.

    python examples/oauth_server.py                         # in one terminal (sign in as demo / demo)
    python examples/oauth_client.py http://localhost:8000/mcp

``browser_login`` registers this script with the server's authorization server, opens the sign-in
page in your browser and catches the redirect on a loopback port. ``reset_counter`` needs a scope
the first sign-in did not grant, so the browser opens once more to ask for it (step-up).
"""

from __future__ import annotations

import sys

from minimcp import Client
from minimcp.client import terminal_elicitation
from minimcp.client.auth import browser_login
from minimcp.types import CallToolResult, TextContent


def text_of(result: CallToolResult) -> str:
    """A tool's first block as printed: the example server's tools answer in text, and only a
    ``TextContent`` block has ``.text``."""
    block = result.content[0]
    return block.text if isinstance(block, TextContent) else str(block)


def main(url: str) -> None:
    login = browser_login(url, client_name="minimcp example client")
    try:
        with Client(url, auth=login, elicitation_callback=terminal_elicitation) as client:
            me = client.call_tool("whoami", {}).structured_content or {}
            print(f"signed in as {me.get('user')} with {' '.join(me.get('scopes', []))}")
            print("counter:", text_of(client.call_tool("increment", {})))
            print(text_of(client.call_tool("reset_counter", {})))
    finally:
        login.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://localhost:8000/mcp")
