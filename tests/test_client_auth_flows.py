"""The other ways to a token, over real HTTP (see ``oauth_fakes``): DPoP-bound tokens with server
nonces, client credentials (secret or signed JWT), the JWT bearer grant of workload identity, the
enterprise ID-JAG, and the discovery variants: the 2025-03-26 server that is its own authorization
server, Client ID Metadata Documents, pre-registered clients and an authorization server that moves.
"""

from __future__ import annotations

import base64
import io
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from minimcp import Client
from minimcp.client.auth import (
    InMemoryTokenStorage,
    LoopbackRedirect,
    OAuthClientProvider,
    OAuthFlowError,
    OAuthTokenError,
    browser_login,
)
from minimcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
    static_assertion_provider,
)
from minimcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from minimcp.client.auth.extensions.jwt_bearer import JWTBearerOAuthProvider
from minimcp.shared.auth import OAuthClientInformationFull
from oauth_fakes import (
    REDIRECT_URI,
    FakeAuthorizationServer,
    World,
    client_metadata,
    guarded_world,
    list_tool_names,
)


@pytest.fixture
def world(serve_wsgi: Callable[[Any], str]) -> Iterator[World]:
    yield from guarded_world(serve_wsgi)


def es256_key() -> tuple[str, str]:
    """A fresh (private PEM, public PEM) pair."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


def sign(private_pem: str, **claims: Any) -> str:
    now = int(time.time())
    return jwt.encode({"iat": now, "exp": now + 300, **claims}, private_pem, algorithm="ES256")


# --- DPoP ----------------------------------------------------------------------------------------------


def test_dpop_binds_the_token_and_honours_both_nonces(world: World) -> None:
    world.auth_server.dpop_algs = ["ES256"]
    world.auth_server.dpop_nonce = "as-nonce-1"
    world.resource.dpop_nonce = "rs-nonce-1"
    with Client(world.url, auth=world.provider(), mode="legacy") as client:
        assert client.call_tool("echo", {"text": "bound"}).content[0].text == "bound"
    code_requests = [h for h, r in zip(world.auth_server.token_headers, world.auth_server.token_requests)
                     if r["grant_type"] == "authorization_code"]
    assert len(code_requests) == 2  # refused once for want of the nonce, then accepted with it
    tokens = world.storage.get_tokens()
    assert tokens is not None and tokens.token_type == "DPoP"
    proofs = world.resource.proofs
    assert proofs and all(p["jkt"] == world.auth_server.bound_keys[tokens.access_token] for p in proofs)
    assert len({p["jti"] for p in proofs}) == len(proofs)  # a fresh proof every time
    assert proofs[-1]["nonce"] == "rs-nonce-1"


def test_dpop_false_keeps_bearer_tokens(world: World) -> None:
    world.auth_server.dpop_algs = ["ES256"]
    list_tool_names(world.url, world.provider(dpop=False))
    tokens = world.storage.get_tokens()
    assert tokens is not None and tokens.token_type == "Bearer"
    assert not any("dpop" in {name.lower() for name in headers} for headers in world.auth_server.token_headers)


# --- client credentials --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_a_secret(world: World, method: str) -> None:
    world.auth_server.clients["svc"] = "SECRET-svc"
    provider = ClientCredentialsOAuthProvider(
        world.url, InMemoryTokenStorage(), "svc", "SECRET-svc", token_endpoint_auth_method=method,  # type: ignore[arg-type]
        issuer=world.auth_server.base,
    )
    assert list_tool_names(world.url, provider) == ["echo", "write_note"]
    (request,), (headers,) = world.auth_server.token_requests, world.auth_server.token_headers
    assert request["grant_type"] == "client_credentials"
    if method == "client_secret_basic":
        assert base64.b64decode(headers["Authorization"][6:]) == b"svc:SECRET-svc" and "client_secret" not in request
    else:
        assert request["client_secret"] == "SECRET-svc" and "Authorization" not in headers
    assert world.user.visits == [] and world.auth_server.registrations == []


def test_client_credentials_refuse_to_follow_the_server_to_another_issuer(world: World) -> None:
    provider = ClientCredentialsOAuthProvider(
        world.url, InMemoryTokenStorage(), "svc", "SECRET-svc", issuer="https://the-real-issuer.example.com"
    )
    with pytest.raises(OAuthFlowError, match="the-real-issuer.example.com"):
        list_tool_names(world.url, provider)
    assert world.auth_server.token_requests == []


def test_client_credentials_without_issuer_warn(world: World) -> None:
    with pytest.warns(DeprecationWarning, match="issuer"):
        ClientCredentialsOAuthProvider(world.url, InMemoryTokenStorage(), "svc", "SECRET-svc")


def test_private_key_jwt_signs_a_fresh_assertion_for_the_issuer(world: World) -> None:
    private, public = es256_key()
    world.auth_server.client_keys["signer"] = public
    signer = SignedJWTParameters(issuer="signer", subject="signer", signing_key=private, signing_algorithm="ES256")
    provider = PrivateKeyJWTOAuthProvider(
        world.url, InMemoryTokenStorage(), "signer", signer.create_assertion_provider(), issuer=world.auth_server.base
    )
    assert list_tool_names(world.url, provider) == ["echo", "write_note"]
    (request,) = world.auth_server.token_requests
    claims = jwt.decode(request["client_assertion"], public, algorithms=["ES256"], audience=world.auth_server.base)
    assert claims["iss"] == claims["sub"] == "signer" and claims["jti"]
    assert request["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def test_signed_jwt_parameters_hide_the_key() -> None:
    assert "BEGIN" not in repr(SignedJWTParameters(issuer="a", subject="a", signing_key="-----BEGIN PRIVATE KEY-----"))


# --- JWT bearer (workload identity) and ID-JAG -------------------------------------------------------------


def test_workload_identity_jwt_bearer_grant(world: World) -> None:
    private, public = es256_key()
    world.auth_server.assertion_keys["https://workloads.example.com"] = public
    workload_token = sign(private, iss="https://workloads.example.com", sub="job-7", aud=world.auth_server.base)
    provider = JWTBearerOAuthProvider(
        world.url, InMemoryTokenStorage(), "job-7", static_assertion_provider(workload_token),
        issuer=world.auth_server.base,
    )
    assert list_tool_names(world.url, provider) == ["echo", "write_note"]
    (request,) = world.auth_server.token_requests
    assert request["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert request["assertion"] == workload_token and request["resource"] == world.url


def test_a_refused_workload_assertion_is_reported_once_without_retry_or_fallback(world: World) -> None:
    private, _ = es256_key()
    _, unrelated_public = es256_key()
    world.auth_server.assertion_keys["https://workloads.example.com"] = unrelated_public
    workload_token = sign(private, iss="https://workloads.example.com", sub="job-7", aud=world.auth_server.base)
    provider = JWTBearerOAuthProvider(
        world.url, InMemoryTokenStorage(), "job-7", static_assertion_provider(workload_token),
        issuer=world.auth_server.base,
    )
    with pytest.raises(OAuthTokenError, match="invalid_grant"):
        list_tool_names(world.url, provider)
    assert [r["grant_type"] for r in world.auth_server.token_requests] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]


def test_identity_assertion_presents_an_id_jag_for_this_resource(world: World) -> None:
    idp_private, idp_public = es256_key()
    world.auth_server.assertion_keys["https://idp.example.com"] = idp_public
    world.auth_server.clients["enterprise-app"] = "SECRET-enterprise"
    asked: list[tuple[str, str]] = []

    def id_jag(audience: str, resource: str) -> str:
        asked.append((audience, resource))
        return sign(idp_private, iss="https://idp.example.com", sub="alice", aud=audience, resource=resource,
                    client_id="enterprise-app")

    provider = IdentityAssertionOAuthProvider(
        world.url, InMemoryTokenStorage(), "enterprise-app", "SECRET-enterprise", world.auth_server.base, id_jag,
        token_endpoint_auth_method="client_secret_basic",
    )
    assert list_tool_names(world.url, provider) == ["echo", "write_note"]
    assert asked == [(world.auth_server.base, world.url)]
    (request,) = world.auth_server.token_requests
    assert request["resource"] == world.url and "client_secret" not in request
    assert world.auth_server.token_headers[0]["Authorization"].startswith("Basic ")


# --- discovery variants ------------------------------------------------------------------------------------


def test_a_2025_03_26_server_is_its_own_authorization_server(world: World) -> None:
    world.resource.publish_metadata = False
    world.auth_server.base = world.resource.base
    list_tool_names(world.url, world.provider())
    assert len(world.auth_server.registrations) == 1 and len(world.auth_server.authorizations) == 1


def test_without_any_metadata_the_default_endpoints_are_used(world: World) -> None:
    world.resource.publish_metadata = False
    world.auth_server.base = world.resource.base
    world.auth_server.metadata_status = 404
    world.auth_server.redirect_iss = ""  # nothing promised an iss, and none comes
    list_tool_names(world.url, world.provider())
    assert world.user.visits[0].startswith(f"{world.resource.base}/authorize?")
    assert len(world.auth_server.registrations) == 1


def test_a_client_id_metadata_document_replaces_registration(world: World) -> None:
    world.auth_server.client_id_metadata_documents = True
    document_url = "https://client.example.com/oauth/metadata.json"
    provider = OAuthClientProvider(
        world.url, client_metadata(), world.storage, world.user.redirect, world.user.callback,
        client_metadata_url=document_url,
    )
    list_tool_names(world.url, provider)
    assert world.auth_server.registrations == []
    assert world.auth_server.authorizations[0]["client_id"] == document_url


def test_client_metadata_url_must_be_https_with_a_path(world: World) -> None:
    with pytest.raises(ValueError, match="https"):
        OAuthClientProvider(world.url, client_metadata(), world.storage, client_metadata_url="http://client.example.com/x")


def test_a_pre_registered_client_is_used_as_stored(world: World) -> None:
    world.auth_server.clients["pre-registered"] = "SECRET-pre"
    world.storage.set_client_info(
        OAuthClientInformationFull(client_id="pre-registered", client_secret="SECRET-pre", redirect_uris=[REDIRECT_URI])
    )
    list_tool_names(world.url, world.provider())
    assert world.auth_server.registrations == []
    assert base64.b64decode(world.auth_server.token_headers[0]["Authorization"][6:]) == b"pre-registered:SECRET-pre"


def test_a_server_without_registration_says_how_to_register(world: World) -> None:
    world.auth_server.offers_registration = False
    with pytest.raises(OAuthFlowError, match="set_client_info"):
        list_tool_names(world.url, world.provider())


def test_a_moved_authorization_server_gets_a_new_registration_and_never_the_old_credentials(
    world: World, serve_wsgi: Callable[[Any], str]
) -> None:
    with Client(world.url, auth=world.provider(), mode="legacy") as client:
        client.list_tools()
        old_client = world.storage.get_client_info()
        new_server = FakeAuthorizationServer()
        new_server.base = serve_wsgi(new_server)
        world.resource.auth_server = new_server  # the resource now trusts only the new server
        client.list_tools()
    assert old_client is not None and len(new_server.registrations) == 1
    assert all(a["client_id"] != old_client.client_id for a in new_server.authorizations)
    assert all(r.get("client_id") != old_client.client_id for r in new_server.token_requests)
    current = world.storage.get_client_info()
    assert current is not None and current.issuer == new_server.base


# --- browser_login --------------------------------------------------------------------------------------


class ThreadedBrowser:
    """A browser stand-in: opens the page on its own thread (a real browser does not block the
    program) and follows every redirect, the last one to the loopback callback."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.pages: list[str] = []

    def __call__(self, url: str) -> bool:
        def visit() -> None:
            self.pages.append(requests.get(url, timeout=30).text)

        thread = threading.Thread(target=visit, daemon=True)
        self.threads.append(thread)
        thread.start()
        return True

    def join(self) -> None:
        for thread in self.threads:
            thread.join(30)


def test_browser_login_catches_the_redirect_on_a_loopback_port(world: World) -> None:
    browser = ThreadedBrowser()
    provider = browser_login(world.url, open_browser=browser)
    try:
        with Client(world.url, auth=provider, mode="legacy") as client:
            assert client.call_tool("echo", {"text": "from a browser"}).content[0].text == "from a browser"
    finally:
        provider.close()
    browser.join()
    (registration,) = world.auth_server.registrations
    (redirect_uri,) = registration["redirect_uris"]
    assert redirect_uri.startswith("http://127.0.0.1:") and redirect_uri.endswith("/callback")
    assert "Logged in" in browser.pages[0]


def test_browser_login_without_a_browser_prints_the_address() -> None:
    shown = io.StringIO()
    loopback = LoopbackRedirect(timeout=0.2, open_browser=lambda url: False, output=shown)
    try:
        loopback.redirect("https://as.example.com/authorize?x=1")
        with pytest.raises(OAuthFlowError, match="No login came back"):
            loopback.callback()
    finally:
        loopback.close()
    assert "https://as.example.com/authorize?x=1" in shown.getvalue()


def test_browser_login_reports_a_refusal() -> None:
    loopback = LoopbackRedirect(timeout=30, open_browser=lambda url: True)
    try:
        loopback.redirect("unused")
        refusal = threading.Thread(
            target=requests.get, args=(loopback.redirect_uri + "?error=access_denied&error_description=no+thanks",),
            kwargs={"timeout": 30},
        )
        refusal.start()
        with pytest.raises(OAuthFlowError, match="access_denied .no thanks."):
            loopback.callback()
        refusal.join(30)
    finally:
        loopback.close()
