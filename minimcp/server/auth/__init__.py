"""Authorization for MCP servers: the protected-resource side (bearer tokens, scopes, metadata)
and an optional built-in OAuth 2.1 authorization server, at the official ``mcp.server.auth`` path.

This package stays cheap to import: the HTTP edge imports only the name below, the bearer check's
challenge and scope rules (``middleware.bearer_auth``) and the current token (``middleware.auth_context``);
the rest (the resource server and the authorization server's routes) loads when a server is
actually protected.
"""

#: Where the HTTP edge leaves a request's verified ``AccessToken`` in the WSGI environ.
ACCESS_TOKEN_KEY = "minimcp.access_token"
