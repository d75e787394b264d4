"""``AuthOptions``: how an HTTP endpoint is protected, given once and passed down whole.

``MCPServer(auth=..., token_verifier=..., auth_server_provider=...)`` takes the three as the
official constructor does; the server keeps them as one ``AuthOptions`` (``mcp.auth_options``),
which its ``wsgi_app()`` protects with unless given another (``wsgi_app(auth_options=...)``, or
the same three keywords). This module imports nothing at run time, so the core can hold one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from minimcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
    from minimcp.server.auth.settings import AuthSettings


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuthOptions:
    """Who may call the endpoint: every request must carry a bearer token, checked by
    ``token_verifier`` (tokens of an outside authorization server) or by ``auth_server_provider``
    (the built-in authorization server, which issues them). All ``None`` (the default): the
    endpoint is open, and the caller is whoever the principal hook says (``REMOTE_USER``)."""

    #: What the tokens protect and where they come from (issuer, resource URL, required scopes).
    auth: AuthSettings | None = None
    #: Checks a bearer token and says whose it is.
    token_verifier: TokenVerifier | None = None
    #: The built-in authorization server: issues tokens, and checks them where no verifier is given.
    auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None

    @property
    def given(self) -> bool:
        """Whether any of the three is set, i.e. the endpoint is meant to be protected."""
        return self.auth is not None or self.token_verifier is not None or self.auth_server_provider is not None

    def __iter__(self) -> Iterator[Any]:
        """``auth, token_verifier, auth_server_provider = options``, as the three are passed around."""
        return iter((self.auth, self.token_verifier, self.auth_server_provider))


class AuthKeywords(TypedDict, total=False):
    """``AuthOptions``' fields as keywords (``wsgi_app(auth=..., token_verifier=...)``)."""

    auth: AuthSettings | None
    token_verifier: TokenVerifier | None
    auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None
