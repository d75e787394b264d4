"""OAuth 2.1 for MCP clients, as ``requests`` auth objects::

    from minimcp.client.auth import OAuthClientProvider

    provider = OAuthClientProvider(url, client_metadata, storage, redirect_handler, callback_handler)
    with Client(url, auth=provider) as client:
        ...

``browser_login(url)`` is the whole interactive flow for a script: system browser, loopback
redirect. The machine-to-machine grants (client credentials, JWT bearer, enterprise ID-JAG) live in
:mod:`minimcp.client.auth.extensions`. DPoP and signed client assertions need the ``auth`` extra
(``pip install 'minimcp-sync[auth]'``); everything else runs on the core install.
"""

from minimcp.client.auth.browser import LoopbackRedirect, browser_login
from minimcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from minimcp.client.auth.oauth2 import OAuthClientProvider, OAuthContext
from minimcp.client.auth.pkce import PKCEParameters
from minimcp.client.auth.storage import InMemoryTokenStorage, TokenStorage
from minimcp.shared.auth import AuthorizationCodeResult

__all__ = [
    "AuthorizationCodeResult",
    "InMemoryTokenStorage",
    "LoopbackRedirect",
    "OAuthClientProvider",
    "OAuthContext",
    "OAuthFlowError",
    "OAuthRegistrationError",
    "OAuthTokenError",
    "PKCEParameters",
    "TokenStorage",
    "browser_login",
]
