"""Authorization for MCP servers: the protected-resource side (bearer tokens, scopes, metadata)
and an optional built-in OAuth 2.1 authorization server, at the official ``mcp.server.auth`` path.

This package stays cheap to import: the HTTP edge imports only the name below, and the rest loads
when a server is actually protected.
"""

#: Where the HTTP edge leaves a request's verified ``AccessToken`` in the WSGI environ.
ACCESS_TOKEN_KEY = "minimcp.access_token"
