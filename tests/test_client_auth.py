"""OAuth on the client: ``OAuthClientProvider`` against a real authorization server and a protected
MCP server, both on loopback ports (see ``oauth_fakes``).

What is checked: discovery from the ``WWW-Authenticate`` challenge, dynamic registration, the
authorization code grant with PKCE S256 and ``state``, the token in storage, refresh on a 401 and
before expiry, step-up on ``insufficient_scope`` with the union of scopes, retry limits, and the
bad inputs a client meets in the wild, each a clear error and never a hang or a leaked secret.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from minimcp import Client
from minimcp.client.auth import (
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from minimcp.client.auth.challenge import parse_www_authenticate
from minimcp.client.auth.discovery import discover_protected_resource
from minimcp.client.auth.wire import authorization_server_session
from minimcp.client.streamable_http import streamable_http_client
from conftest import refusing_port
from oauth_fakes import (
    SECRET_PREFIX,
    World,
    guarded_world,
    list_tool_names,
)


@pytest.fixture
def world(serve_wsgi: Callable[[Any], str]) -> Iterator[World]:
    yield from guarded_world(serve_wsgi)


# --- the happy path ------------------------------------------------------------------------------


def test_first_request_discovers_registers_logs_in_and_calls(world: World) -> None:
    provider = world.provider()
    with Client(world.url, auth=provider, mode="legacy") as client:
        assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"

    assert len(world.user.visits) == 1
    (authorization,) = world.auth_server.authorizations
    assert authorization["code_challenge_method"] == "S256"
    assert authorization["resource"] == world.url
    assert authorization["client_id"] in world.auth_server.clients
    assert world.auth_server.registrations[0]["redirect_uris"] == ["http://127.0.0.1:9/callback"]
    code_request = next(r for r in world.auth_server.token_requests if r["grant_type"] == "authorization_code")
    assert code_request["resource"] == world.url and code_request["code_verifier"]
    tokens = world.storage.get_tokens()
    assert tokens is not None and world.auth_server.scopes_of(tokens.access_token) is not None
    client_info = world.storage.get_client_info()
    assert client_info is not None and client_info.issuer == world.auth_server.base


def test_streamable_http_client_and_plain_requests_take_the_provider(world: World) -> None:
    provider = world.provider()
    with Client(streamable_http_client(world.url, auth=provider), mode="legacy") as client:
        assert [tool.name for tool in client.list_tools().tools] == ["echo", "write_note"]
    # A plain requests user reuses the same provider and its token: no second login.
    answer = requests.post(
        world.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"},
        auth=provider,
        timeout=30,
    )
    assert answer.status_code != 401
    assert len(world.user.visits) == 1


def test_a_plain_requests_user_may_give_header_values_as_bytes(world: World) -> None:
    """requests sends a header value given as bytes as it is, and so hands it to the provider."""
    provider = world.provider()
    answer = requests.post(
        world.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": b"2026-07-28",
                 "Authorization": b"Bearer not-a-token"},
        auth=provider,
        timeout=30,
    )
    assert answer.status_code != 401  # past the provider, whatever the MCP server makes of a bare ping
    assert len(world.user.visits) == 1
    assert provider.context.protocol_version == "2026-07-28"


def test_tokens_are_never_sent_to_another_origin(world: World, serve_wsgi: Callable[[Any], str]) -> None:
    provider = world.provider()
    list_tool_names(world.url, provider)
    seen: list[str | None] = []

    def elsewhere(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(environ.get("HTTP_AUTHORIZATION"))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    requests.get(serve_wsgi(elsewhere), auth=provider, timeout=30)
    assert seen == [None]


# --- refresh ---------------------------------------------------------------------------------------


def test_a_401_with_a_refresh_token_refreshes_without_a_new_login(world: World) -> None:
    provider = world.provider()
    with Client(world.url, auth=provider, mode="legacy") as client:
        client.list_tools()
        world.auth_server.revoke_access_tokens()
        assert client.call_tool("echo", {"text": "again"}).content[0].text == "again"
    assert len(world.user.visits) == 1
    grants = [r["grant_type"] for r in world.auth_server.token_requests]
    assert grants == ["authorization_code", "refresh_token"]


def test_a_token_about_to_expire_is_refreshed_before_it_is_sent(world: World) -> None:
    world.auth_server.expires_in = 1  # inside the provider's expiry margin: stale as soon as it arrives
    provider = world.provider()
    with Client(world.url, auth=provider, mode="legacy") as client:
        client.list_tools()
        refused_before = sum(1 for _, status in world.resource.seen if status == 401)
        client.list_tools()
        refused_after = sum(1 for _, status in world.resource.seen if status == 401)
    assert refused_after == refused_before  # the refresh happened before the request, not after a 401
    assert "refresh_token" in [r["grant_type"] for r in world.auth_server.token_requests]
    assert len(world.user.visits) == 1


def test_a_refused_refresh_falls_back_to_a_new_login(world: World) -> None:
    provider = world.provider()
    with Client(world.url, auth=provider, mode="legacy") as client:
        client.list_tools()
        world.auth_server.revoke_access_tokens()
        with world.auth_server.lock:
            world.auth_server.refresh_tokens.clear()
        client.list_tools()
    assert len(world.user.visits) == 2


# --- scopes and step-up -----------------------------------------------------------------------------


def test_step_up_on_insufficient_scope_asks_for_the_union(world: World) -> None:
    world.resource.required = {"*": "read", "tools/call": "write"}
    provider = world.provider()
    with Client(world.url, auth=provider, mode="legacy") as client:
        client.list_tools()
        assert client.call_tool("write_note", {"text": "x"}).content[0].text == "noted: x"
    first, second = world.auth_server.authorizations
    assert first["scope"] == "read"
    assert set(second["scope"].split()) == {"read", "write"}


def test_a_scope_that_is_never_enough_stops_after_the_retry_limit(world: World) -> None:
    world.resource.required = {"*": "read", "tools/call": "admin"}
    world.auth_server.grantable = {"read"}
    failures: list[Exception] = []
    with Client(world.url, auth=world.provider(), mode="legacy") as client:
        client.list_tools()
        for _ in range(5):
            try:
                client.call_tool("write_note", {"text": "x"})
            except Exception as exc:  # first the 403 answers, then the provider's refusal to ask again
                failures.append(exc)
    assert len(failures) == 5
    assert isinstance(failures[-1], OAuthFlowError) and "giving up" in str(failures[-1])
    # one login that worked, then the step-ups the limit allows
    assert len(world.auth_server.authorizations) == 1 + OAuthClientProvider.max_authorizations


def test_an_endless_401_loop_is_bounded(world: World) -> None:
    world.auth_server.token_body = {"access_token": "SECRET-never-accepted", "token_type": "Bearer"}
    provider = world.provider()
    failures: list[BaseException] = []
    for _ in range(10):
        try:
            answer = requests.post(world.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, auth=provider, timeout=30)
            assert answer.status_code == 401
        except OAuthFlowError as exc:
            failures.append(exc)
    assert len(world.user.visits) == OAuthClientProvider.max_authorizations
    assert len(failures) == 10 - OAuthClientProvider.max_authorizations
    assert all("giving up" in str(f) and SECRET_PREFIX not in str(f) for f in failures)


def test_concurrent_401s_run_one_login(world: World) -> None:
    provider = world.provider()
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def call() -> None:
        try:
            barrier.wait(10)
            list_tool_names(world.url, provider)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(world.user.visits) == 1


# --- bad input ---------------------------------------------------------------------------------------


def test_resource_metadata_that_is_html_is_a_clear_error(world: World) -> None:
    world.resource.metadata_body = b"<!doctype html><html><body>Welcome</body></html>"
    with pytest.raises(OAuthFlowError, match="HTML page, not JSON"):
        list_tool_names(world.url, world.provider())


def test_truncated_authorization_server_metadata_is_a_clear_error(world: World) -> None:
    world.auth_server.metadata_body = b'{"issuer": "http://127.0.0.1", "token_endp'
    with pytest.raises(OAuthFlowError, match="not valid JSON"):
        list_tool_names(world.url, world.provider())


def test_metadata_naming_another_issuer_is_refused(world: World) -> None:
    world.auth_server.metadata_issuer = "https://attacker.example.com"
    with pytest.raises(OAuthFlowError, match="attacker.example.com"):
        list_tool_names(world.url, world.provider())
    assert world.auth_server.registrations == []


def test_resource_metadata_for_another_host_is_refused(world: World) -> None:
    world.resource.resource = "https://elsewhere.example.com/mcp"
    with pytest.raises(OAuthFlowError, match="elsewhere.example.com"):
        list_tool_names(world.url, world.provider())
    assert world.auth_server.authorizations == []


def test_a_token_answer_without_access_token_is_a_clear_error(world: World) -> None:
    world.auth_server.token_body = {"token_type": "Bearer", "refresh_token": "SECRET-refresh-orphan"}
    with pytest.raises(OAuthTokenError, match="without an access_token") as raised:
        list_tool_names(world.url, world.provider())
    assert SECRET_PREFIX not in str(raised.value)


def test_a_redirect_with_the_wrong_state_is_refused(world: World) -> None:
    world.auth_server.redirect_state = "forged"
    with pytest.raises(OAuthFlowError, match="state"):
        list_tool_names(world.url, world.provider())
    assert world.auth_server.token_requests == []


def test_a_redirect_from_the_wrong_issuer_is_refused(world: World) -> None:
    world.auth_server.redirect_iss = "https://evil.example.com"
    with pytest.raises(OAuthFlowError, match="evil.example.com"):
        list_tool_names(world.url, world.provider())
    assert world.auth_server.token_requests == []


def test_a_redirect_missing_a_promised_iss_is_refused(world: World) -> None:
    world.auth_server.redirect_iss = ""
    with pytest.raises(OAuthFlowError, match="iss"):
        list_tool_names(world.url, world.provider())
    assert world.auth_server.token_requests == []


def test_a_registration_endpoint_that_is_down_is_a_clear_error(world: World) -> None:
    with refusing_port() as port:
        world.auth_server.registration_endpoint = f"http://127.0.0.1:{port}/register"
        with pytest.raises(OAuthRegistrationError, match="could not be reached"):
            list_tool_names(world.url, world.provider(timeout=5))


def test_secrets_never_reach_logs_or_errors(world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    messages: list[str] = []
    provider = world.provider()
    with Client(world.url, auth=provider, mode="legacy") as client:
        client.list_tools()
        world.auth_server.revoke_access_tokens()
        client.list_tools()  # a refresh
        world.auth_server.revoke_access_tokens()
        world.auth_server.token_body = {"error": "invalid_grant", "access_token": "", "refresh_token": "SECRET-x"}
        with world.auth_server.lock:
            world.auth_server.refresh_tokens.clear()
        try:
            client.list_tools()
        except Exception as exc:
            messages.append(str(exc))
    messages += [record.getMessage() for record in caplog.records]
    messages += [repr(world.storage.get_tokens()), repr(world.storage.get_client_info())]
    assert all(SECRET_PREFIX not in message for message in messages)


# --- the challenge parser ---------------------------------------------------------------------------


def test_www_authenticate_with_several_challenges_and_quoted_commas() -> None:
    parsed = parse_www_authenticate(
        'Basic realm="a, b", Bearer error="insufficient_scope", scope="read write", '
        'resource_metadata="https://x.example/.well-known/oauth-protected-resource", DPoP algs="ES256"'
    )
    assert [c.scheme for c in parsed] == ["basic", "bearer", "dpop"]
    assert parsed[0].params == {"realm": "a, b"}
    assert parsed[1].params["scope"] == "read write"
    assert parsed[2].params == {"algs": "ES256"}


# --- the official utils names ------------------------------------------------------------------------


@pytest.mark.parametrize("www_authenticate_url", [None, "https://rs.example.com/custom/prm.json"])
@pytest.mark.parametrize("server_url", ["https://rs.example.com/mcp", "https://rs.example.com", "https://rs.example.com/a/b/"])
def test_discovery_urls_match_the_official_sdk(www_authenticate_url: str | None, server_url: str) -> None:
    from mcp.client.auth import utils as official

    from minimcp.client.auth import utils

    assert utils.build_protected_resource_metadata_discovery_urls(www_authenticate_url, server_url) == \
        official.build_protected_resource_metadata_discovery_urls(www_authenticate_url, server_url)
    for issuer in (None, "https://as.example.com", "https://as.example.com/tenant1", "https://as.example.com/t/"):
        assert utils.build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url) == \
            official.build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url)


@pytest.mark.parametrize("challenge", [None, "mcp:basic"])
@pytest.mark.parametrize("resource_scopes", [None, ["mcp:read", "mcp:write"]])
@pytest.mark.parametrize("server_scopes", [None, ["mcp:basic", "offline_access"], ["x"]])
def test_scope_selection_matches_the_official_sdk(
    challenge: str | None, resource_scopes: list[str] | None, server_scopes: list[str] | None
) -> None:
    from mcp.client.auth import utils as official
    from mcp.shared import auth as official_models

    from minimcp.client.auth import utils
    from minimcp.shared import auth as models

    resource = {"resource": "https://rs.example.com/mcp", "authorization_servers": ["https://as.example.com"],
                "scopes_supported": resource_scopes}
    server = {"issuer": "https://as.example.com", "authorization_endpoint": "https://as.example.com/a",
              "token_endpoint": "https://as.example.com/t", "scopes_supported": server_scopes}
    grants = ["authorization_code", "refresh_token"]
    ours = utils.get_client_metadata_scopes(
        challenge, models.ProtectedResourceMetadata(**resource), models.OAuthMetadata(**server), grants
    )
    theirs = official.get_client_metadata_scopes(
        challenge, official_models.ProtectedResourceMetadata(**resource), official_models.OAuthMetadata(**server), grants
    )
    assert ours == theirs


def test_a_metadata_read_survives_a_connection_the_server_dropped() -> None:
    """The first connection is closed without an answer (a kept-alive connection the server just
    timed out looks the same); the GET is sent again on a new one."""
    document = b'{"resource": "http://127.0.0.1/mcp", "authorization_servers": ["https://as.example.com"]}'
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve() -> None:
        for attempt in range(2):
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                if attempt == 1:
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                       b"Content-Length: %d\r\n\r\n%s" % (len(document), document))

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        with authorization_server_session() as http:
            found = discover_protected_resource(http, f"http://127.0.0.1:{port}/mcp", None, timeout=10)
    finally:
        server.join(10)
        listener.close()
    assert found is not None and found.authorization_servers == ["https://as.example.com"]
