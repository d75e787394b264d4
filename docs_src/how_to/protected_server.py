"""Notes behind the identity provider you already run: each request's bearer token is checked
against the provider's published keys, and clients are told where to get one."""

from minimcp.server import MCPServer
from minimcp.server.auth.jwt_verifier import JWTVerifier
from minimcp.server.auth.settings import AuthSettings
from minimcp.server.mcpserver import Context

mcp = MCPServer(
    "Notes",
    auth=AuthSettings(
        issuer_url="https://idp.example.com/",            # exactly the token's "iss"
        resource_server_url="https://notes.example.com/mcp",
        required_scopes=["notes:read"],
        validate_token_resource=False,                    # JWTVerifier checks "aud" itself
    ),
    token_verifier=JWTVerifier(
        jwks_uri="https://idp.example.com/.well-known/jwks.json",
        issuer="https://idp.example.com/",
        audience="https://notes.example.com/mcp",         # register this API/audience at your IdP
    ),
)


@mcp.tool()
def my_notes(ctx: Context) -> list[str]:
    return [f"{ctx.access_token.subject}'s first note"]   # or get_access_token() anywhere


@mcp.tool(required_scopes=["notes:write"])                # 403 insufficient_scope until granted
def delete_note(note_id: str) -> str:
    return f"deleted {note_id}"


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
