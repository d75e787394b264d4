"""Notes on a server that is its own authorization server. ``MyProvider`` starts from
examples/oauth_server.py's ``InMemoryProvider``: swap its dictionaries for your database and its
password check for your user store."""

import sys
from pathlib import Path

from minimcp.server import MCPServer
from minimcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from oauth_server import InMemoryProvider  # noqa: E402  (the example, found through the line above)


class MyProvider(InMemoryProvider):
    def __init__(self) -> None:
        super().__init__("https://notes.example.com", "https://notes.example.com/mcp", users={"demo": "demo"})


mcp = MCPServer("Notes", auth_server_provider=MyProvider(), auth=AuthSettings(
    issuer_url="https://notes.example.com", resource_server_url="https://notes.example.com/mcp",
    validate_token_resource=True, required_scopes=["notes:read"],
    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["notes:read"]),
    revocation_options=RevocationOptions(enabled=True)))

if __name__ == "__main__":
    mcp.run(transport="streamable-http")
