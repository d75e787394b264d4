"""What the official SDK's auth examples, ported by the rule, needed from minimcp.

Each test is one cause found by running a ported example against its server: the low-level app
that takes a provider for its authorization-server endpoints and a verifier for its tokens (the
``oauth`` and ``identity_assertion`` stories), and a program ported only in part, whose official
``async def`` verifier, provider, storage or callback reached minimcp (it then answered every
request with a 500, or misread a coroutine as a token).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest
import requests
from conftest import TIMEOUT, final_message, modern_post

from minimcp import Client, types
from minimcp.client.auth import InMemoryTokenStorage, OAuthClientProvider
from minimcp.client.auth.extensions.client_credentials import PrivateKeyJWTOAuthProvider
from minimcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from minimcp.client.auth.extensions.jwt_bearer import JWTBearerOAuthProvider
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import Server
from minimcp.server.auth.middleware.auth_context import get_access_token
from minimcp.server.auth.provider import AccessToken, ProviderTokenVerifier
from minimcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from minimcp.server.mcpserver import MCPServer
from minimcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


class TokenBook:
    """A provider that only issues and looks up access tokens; enough for a resource server's gate."""

    def __init__(self) -> None:
        self.tokens: dict[str, AccessToken] = {}
        self.clients: dict[str, OAuthClientInformationFull] = {}

    def mint(self, subject: str) -> str:
        token = secrets.token_urlsafe(32)
        self.tokens[token] = AccessToken(token=token, client_id="c1", scopes=["mcp"], subject=subject,
                                         expires_at=int(time.time()) + 600)
        return token

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)


def settings(base: str) -> AuthSettings:
    return AuthSettings(issuer_url=base, resource_server_url=base + "/mcp", required_scopes=["mcp"],
                        validate_token_resource=False,
                        client_registration_options=ClientRegistrationOptions(enabled=True))


def whoami_server() -> Server[Any]:
    def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"hello {get_access_token().subject}")])

    return Server("low", on_call_tool=call_tool)


def test_the_low_level_app_takes_a_provider_for_its_endpoints_and_a_verifier_for_its_tokens(serve_wsgi):
    holder: dict[str, Any] = {}
    base = serve_wsgi(lambda environ, start: holder["app"](environ, start))
    book = TokenBook()
    holder["app"] = whoami_server().streamable_http_app(
        auth=settings(base), token_verifier=ProviderTokenVerifier(book), auth_server_provider=book)
    try:
        metadata = requests.get(base + "/.well-known/oauth-authorization-server", timeout=TIMEOUT)
        assert metadata.status_code == 200 and metadata.json()["registration_endpoint"] == base + "/register"
        refused, _ = modern_post(base + "/mcp", "tools/call", {"name": "whoami", "arguments": {}})
        assert refused.status_code == 401
        answer, _ = modern_post(base + "/mcp", "tools/call", {"name": "whoami", "arguments": {}},
                                headers={"Authorization": f"Bearer {book.mint('dana')}"})
        assert final_message(answer)["result"]["content"][0]["text"] == "hello dana"
    finally:
        holder["app"].close()


def test_mcpserver_still_takes_one_source_of_tokens():
    book = TokenBook()
    with pytest.raises(ValueError, match="not both"):
        MCPServer("x", auth=settings("http://127.0.0.1:9"), token_verifier=ProviderTokenVerifier(book),
                  auth_server_provider=book)


class AsyncVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        return None


class AsyncBook(TokenBook):
    async def load_access_token(self, token: str) -> AccessToken | None:  # type: ignore[override]
        return None


@pytest.mark.parametrize("options", [{"token_verifier": AsyncVerifier()}, {"auth_server_provider": AsyncBook()}],
                         ids=["verifier", "provider"])
def test_an_async_verifier_or_provider_is_refused_when_the_server_is_built(options):
    with pytest.raises(TypeError, match="'async def'; delete async/await when porting"):
        MCPServer("x", auth=settings("http://127.0.0.1:9"), **options)
    with pytest.raises(TypeError, match="'async def'; delete async/await when porting"):
        whoami_server().streamable_http_app(auth=settings("http://127.0.0.1:9"), **options)


def test_an_async_helper_outside_the_protocol_is_left_alone(serve_wsgi):
    """Only the methods minimcp calls must be plain: a provider may keep an async helper of its own."""

    class BookWithAsyncAudit(TokenBook):
        async def audit(self) -> None:
            return None

    book = BookWithAsyncAudit()
    app = whoami_server().streamable_http_app(
        auth=settings("http://127.0.0.1:9"), token_verifier=ProviderTokenVerifier(book), auth_server_provider=book)
    try:
        answer, _ = modern_post(serve_wsgi(app) + "/mcp", "tools/call", {"name": "whoami", "arguments": {}},
                                headers={"Authorization": f"Bearer {book.mint('erin')}"})
        assert final_message(answer)["result"]["content"][0]["text"] == "hello erin"
    finally:
        app.close()


class AsyncStorage(InMemoryTokenStorage):
    async def get_tokens(self) -> OAuthToken | None:  # type: ignore[override]
        return None


async def async_redirect(url: str) -> None:
    return None


async def async_assertion(*args: str) -> str:
    return "jwt"


class AsyncCallback:
    async def __call__(self) -> None:
        return None


METADATA = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/cb"])


@pytest.mark.parametrize("make", [
    lambda url: OAuthClientProvider(url, METADATA, AsyncStorage()),
    lambda url: OAuthClientProvider(url, METADATA, InMemoryTokenStorage(), redirect_handler=async_redirect),
    lambda url: OAuthClientProvider(url, METADATA, InMemoryTokenStorage(), callback_handler=AsyncCallback()),
    lambda url: PrivateKeyJWTOAuthProvider(url, InMemoryTokenStorage(), "c", async_assertion, issuer=url),
    lambda url: JWTBearerOAuthProvider(url, InMemoryTokenStorage(), "c", async_assertion, issuer=url),
    lambda url: IdentityAssertionOAuthProvider(url, InMemoryTokenStorage(), "c", "s", url, async_assertion),
], ids=["storage", "redirect_handler", "callback_object", "private_key_jwt", "jwt_bearer", "identity_assertion"])
def test_an_async_client_auth_callback_is_refused_before_any_request(serve_wsgi, make):
    """Before, the coroutine was taken for stored tokens (or an assertion) and the first request failed
    far from the cause; now the provider is refused where it is built, and no request is made."""
    hits: list[str] = []

    def app(environ: dict[str, Any], start: Any) -> list[bytes]:
        hits.append(environ["PATH_INFO"])
        start("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
        return [b""]

    url = serve_wsgi(app) + "/mcp"
    with pytest.raises(TypeError, match="'async def'; delete async/await when porting"):
        with Client(streamable_http_client(url, auth=make(url))):
            pass
    assert hits == []
