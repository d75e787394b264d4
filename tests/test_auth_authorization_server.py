"""The built-in authorization server (``auth_server_provider=``) of ``examples/oauth_server.py``,
over real HTTP: metadata, registration, the browser's authorize-and-login, the token endpoint's
grants and client authentication, revocation, and the official SDK's OAuth client completing the
whole flow and calling protected tools in both eras.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import secrets
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from auth_support import until_limited
from conftest import TIMEOUT, load_example, modern_post, final_message

from minimcp.httpd import WSGIServer

REDIRECT = "http://127.0.0.1:9/callback"


class Running:
    def __init__(self, module: Any, **options: Any) -> None:
        self.httpd = WSGIServer(lambda environ, start: self.app(environ, start), "127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{self.httpd.port}"
        self.mcp = module.build_server(self.base, **options)
        self.app = self.mcp.wsgi_app()
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown(5)
        self.thread.join(5)
        self.app.close()


@pytest.fixture
def server() -> Iterator[Running]:
    running = Running(load_example("oauth_server"), client_redirect_uri=REDIRECT)
    yield running
    running.stop()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(server: Running, **metadata: Any) -> dict[str, Any]:
    body = {"redirect_uris": [REDIRECT], "client_name": "test", **metadata}
    response = requests.post(server.base + "/register", json=body, timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    return response.json()


def authorize(server: Running, client_id: str, challenge: str, *, state: str = "st", scope: str | None = None,
              username: str = "demo", password: str | None = None) -> requests.Response:
    """The browser's part: /authorize, the login page, the login; the last redirect is returned unfollowed."""
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": state,
              "code_challenge": challenge, "code_challenge_method": "S256", "resource": server.base + "/mcp"}
    if scope:
        params["scope"] = scope
    browser = requests.Session()
    first = browser.get(server.base + "/authorize", params=params, allow_redirects=False, timeout=TIMEOUT)
    assert first.status_code == 302, first.text
    page = browser.get(first.headers["Location"], timeout=TIMEOUT)
    assert page.status_code == 200 and "Sign in" in page.text
    request_id = parse_qs(urlsplit(first.headers["Location"]).query)["request"][0]
    return browser.post(server.base + "/login", data={"request": request_id, "username": username,
                                                      "password": username if password is None else password},
                        allow_redirects=False, timeout=TIMEOUT)


def code_from(redirect: requests.Response) -> dict[str, str]:
    assert redirect.status_code == 302, redirect.text
    location = redirect.headers["Location"]
    assert location.startswith(REDIRECT)
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def token(server: Running, form: dict[str, str], auth: Any = None) -> requests.Response:
    return requests.post(server.base + "/token", data=form, auth=auth, timeout=TIMEOUT)


def flow(server: Running, client: dict[str, Any], scope: str | None = None) -> dict[str, Any]:
    verifier, challenge = pkce()
    got = code_from(authorize(server, client["client_id"], challenge, scope=scope))
    form = {"grant_type": "authorization_code", "code": got["code"], "redirect_uri": REDIRECT,
            "code_verifier": verifier, "client_id": client["client_id"]}
    if client.get("client_secret"):
        form["client_secret"] = client["client_secret"]
    answer = token(server, form)
    assert answer.status_code == 200, answer.text
    return answer.json()


def call(server: Running, access_token: str, tool: str) -> requests.Response:
    return modern_post(server.base + "/mcp", "tools/call", {"name": tool, "arguments": {}},
                       headers={"Authorization": f"Bearer {access_token}"})[0]


# --- metadata and registration ----------------------------------------------------------------------
def test_metadata_names_every_endpoint_and_the_issuer_exactly(server):
    response = requests.get(server.base + "/.well-known/oauth-authorization-server", timeout=TIMEOUT)
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    document = response.json()
    assert document["issuer"] == server.base  # no trailing slash: RFC 8414 compares it as a string
    for name, path in [("authorization_endpoint", "/authorize"), ("token_endpoint", "/token"),
                       ("registration_endpoint", "/register"), ("revocation_endpoint", "/revoke")]:
        assert document[name] == server.base + path
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert set(document["token_endpoint_auth_methods_supported"]) == {"client_secret_basic", "client_secret_post",
                                                                      "none"}
    preflight = requests.options(server.base + "/token", headers={"Origin": "http://app.test"}, timeout=TIMEOUT)
    assert preflight.status_code == 204 and preflight.headers["Access-Control-Allow-Origin"] == "*"


def test_registration_issues_credentials_and_refuses_what_it_cannot_honour(server):
    confidential = register(server)
    assert confidential["token_endpoint_auth_method"] == "client_secret_post"
    assert confidential["client_secret"] and confidential["client_secret_expires_at"] == 0
    public = register(server, token_endpoint_auth_method="none")
    assert "client_secret" not in public
    for metadata, reason in [({"token_endpoint_auth_method": "private_key_jwt"}, "private_key_jwt"),
                             ({"scope": "mcp:tools root"}, "root"),
                             ({"grant_types": ["refresh_token"]}, "authorization_code"),
                             ({"redirect_uris": []}, "redirect_uris")]:
        response = requests.post(server.base + "/register", json={"redirect_uris": [REDIRECT], **metadata},
                                 timeout=TIMEOUT)
        assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
        assert reason in response.json()["error_description"]
    garbage = requests.post(server.base + "/register", data=b"\xff{", timeout=TIMEOUT)
    assert garbage.status_code == 400


def test_a_registration_is_bounded_in_size(server):
    def post(**metadata: Any) -> requests.Response:
        return requests.post(server.base + "/register", json={"redirect_uris": [REDIRECT], **metadata},
                             timeout=TIMEOUT)

    huge = post(client_name="x" * 60_000)
    assert huge.status_code == 413 and huge.json()["error"] == "invalid_client_metadata"
    for metadata, reason in [({"client_name": "x" * 201}, "client_name"),
                             ({"redirect_uris": [f"{REDIRECT}{n}" for n in range(11)]}, "redirect_uris"),
                             ({"contacts": ["a@b.test"] * 11}, "contacts"),
                             ({"client_uri": "https://app.test/" + "x" * 2000}, "client_uri")]:
        refused = post(**metadata)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_client_metadata", metadata
        assert reason in refused.json()["error_description"]
    assert post(client_name="x" * 200, redirect_uris=[f"{REDIRECT}{n}" for n in range(10)]).status_code == 201


@pytest.mark.parametrize("uri", ["javascript:alert(1)", "data:text/html,hi", "file:///etc/passwd",
                                 "http://attacker.example/cb", "com.example.app:/cb", "https://app.test@attacker.test/cb",
                                 "https://app.test/cb#frag"])
def test_a_redirect_uri_that_could_leak_the_code_is_refused(server, uri):
    refused = requests.post(server.base + "/register", json={"redirect_uris": [REDIRECT, uri]}, timeout=TIMEOUT)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri", refused.text


def test_https_and_loopback_http_redirect_uris_are_accepted(server):
    uris = ["https://app.example/cb", "http://localhost:3030/callback", "http://[::1]:5/cb", "http://127.0.0.1/cb"]
    assert register(server, redirect_uris=uris)["redirect_uris"] == uris


def test_registrations_are_rate_limited_per_address(server):
    accepted, limited = until_limited(server.base + "/register", REDIRECT)
    assert accepted >= 10
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert "Too many registrations" in limited.json()["error_description"]
    port = urlsplit(server.base).port
    other = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT, source_address=("127.0.0.2", 0))
    other.request("POST", "/register", body=json.dumps({"redirect_uris": [REDIRECT]}),
                  headers={"Content-Type": "application/json"})
    assert other.getresponse().status == 201  # another address has a rate of its own
    other.close()
    assert requests.get(server.base + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).status_code == 200


def test_the_rate_limiter_refills_and_remembers_a_bounded_number_of_addresses():
    from minimcp.server.auth.rate_limit import RateLimiter

    now = [0.0]
    limiter = RateLimiter(10, 60, max_keys=3, clock=lambda: now[0])
    assert [limiter.retry_after("a") for _ in range(10)] == [None] * 10
    assert limiter.retry_after("a") == 6  # one more every six seconds
    now[0] += 6
    assert limiter.retry_after("a") is None and limiter.retry_after("a") == 6
    for other in ("b", "c", "d"):  # three newer addresses push "a" out of the table
        assert limiter.retry_after(other) is None
    assert limiter.retry_after("a") is None
    with pytest.raises(ValueError):
        RateLimiter(0, 60)


# --- the code grant ------------------------------------------------------------------------------------
def test_login_redirects_back_with_code_state_and_issuer(server):
    _, challenge = pkce()
    got = code_from(authorize(server, "demo-client", challenge, state="xyz"))
    assert got["state"] == "xyz" and got["iss"] == server.base and len(got["code"]) >= 32


def test_a_wrong_password_stays_on_the_login_page(server):
    _, challenge = pkce()
    response = authorize(server, "demo-client", challenge, password="nope")
    assert response.status_code == 401 and "Wrong user name or password" in response.text


@pytest.mark.parametrize("kind", ["public", "basic", "post"])
def test_each_client_authentication_method_gets_tokens_that_call_tools(server, kind):
    client = register(server, token_endpoint_auth_method={"public": "none", "basic": "client_secret_basic",
                                                          "post": "client_secret_post"}[kind])
    verifier, challenge = pkce()
    got = code_from(authorize(server, client["client_id"], challenge))
    form = {"grant_type": "authorization_code", "code": got["code"], "redirect_uri": REDIRECT,
            "code_verifier": verifier}
    auth = None
    if kind == "basic":
        auth = (client["client_id"], client["client_secret"])
    else:
        form["client_id"] = client["client_id"]
        if kind == "post":
            form["client_secret"] = client["client_secret"]
    answer = token(server, form, auth)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    tokens = answer.json()
    assert tokens["token_type"] == "Bearer" and tokens["refresh_token"]
    result = final_message(call(server, tokens["access_token"], "whoami"))["result"]
    assert result["structuredContent"] == {"user": "demo", "client_id": client["client_id"],
                                           "scopes": ["mcp:tools"]}


def test_client_authentication_failures_are_invalid_client(server):
    client = register(server)
    base = {"grant_type": "authorization_code", "code": "x", "code_verifier": "v" * 43}
    cases = [({**base, "client_id": client["client_id"], "client_secret": "wrong"}, None),
             ({**base, "client_id": client["client_id"]}, None),
             ({**base, "client_id": "nobody"}, None),
             ({**base, "client_id": client["client_id"], "client_secret": client["client_secret"]},
              (client["client_id"], client["client_secret"]))]
    for form, auth in cases:
        response = token(server, form, auth)
        assert response.status_code == 401 and response.json()["error"] == "invalid_client", response.text


def test_pkce_code_reuse_and_redirect_mismatch_are_refused(server):
    client = register(server, token_endpoint_auth_method="none")
    verifier, challenge = pkce()
    code = code_from(authorize(server, client["client_id"], challenge))["code"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
            "client_id": client["client_id"]}
    wrong = token(server, {**form, "code_verifier": pkce()[0]})
    assert wrong.json() == {"error": "invalid_grant", "error_description": "incorrect code_verifier"}
    moved = token(server, {**form, "code_verifier": verifier, "redirect_uri": "http://127.0.0.1:9/elsewhere"})
    assert moved.json()["error"] == "invalid_request"
    assert token(server, {**form, "code_verifier": verifier}).status_code == 200
    again = token(server, {**form, "code_verifier": verifier})
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    odd = token(server, {**form, "code_verifier": "é" * 50})
    assert odd.status_code == 400 and odd.json()["error"] == "invalid_request"
    unknown = token(server, {**form, "grant_type": "password", "code_verifier": verifier})
    assert unknown.json()["error"] == "unsupported_grant_type"


def refresh(server: Running, client: dict[str, Any], refresh_token: str, **form: str) -> requests.Response:
    return token(server, {"grant_type": "refresh_token", "refresh_token": refresh_token,
                          "client_id": client["client_id"], "client_secret": client["client_secret"], **form})


def test_refresh_rotates_and_revocation_ends_both_tokens(server):
    client = register(server)
    first = flow(server, client)
    refreshed = refresh(server, client, first["refresh_token"], scope="mcp:tools")
    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()
    assert second["refresh_token"] != first["refresh_token"] and second["scope"] == "mcp:tools"
    assert call(server, first["access_token"], "whoami").status_code == 401  # rotated out
    assert call(server, second["access_token"], "whoami").status_code == 200
    widen = refresh(server, client, second["refresh_token"], scope="mcp:tools mcp:admin")
    assert widen.json()["error"] == "invalid_scope"
    revoked = requests.post(server.base + "/revoke", data={"token": second["access_token"],
                                                           "client_id": client["client_id"],
                                                           "client_secret": client["client_secret"]},
                            timeout=TIMEOUT)
    assert revoked.status_code == 200
    assert call(server, second["access_token"], "whoami").status_code == 401
    assert refresh(server, client, second["refresh_token"]).json()["error"] == "invalid_grant"


def test_a_replayed_rotated_refresh_token_revokes_its_whole_family(server):
    client = register(server)
    first = flow(server, client)
    second = refresh(server, client, first["refresh_token"]).json()
    third = refresh(server, client, second["refresh_token"]).json()
    other = flow(server, client)  # another sign-in of the same client: another family
    assert call(server, third["access_token"], "whoami").status_code == 200
    reuse = refresh(server, client, first["refresh_token"])
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    assert call(server, third["access_token"], "whoami").status_code == 401
    assert refresh(server, client, third["refresh_token"]).json()["error"] == "invalid_grant"
    assert call(server, other["access_token"], "whoami").status_code == 200


def test_a_replayed_code_revokes_the_tokens_it_bought(server):
    client = register(server, token_endpoint_auth_method="none")
    verifier, challenge = pkce()
    code = code_from(authorize(server, client["client_id"], challenge))["code"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
            "client_id": client["client_id"], "code_verifier": verifier}
    bought = token(server, form).json()
    assert call(server, bought["access_token"], "whoami").status_code == 200
    replay = token(server, form)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert call(server, bought["access_token"], "whoami").status_code == 401
    gone = token(server, {"grant_type": "refresh_token", "refresh_token": bought["refresh_token"],
                          "client_id": client["client_id"]})
    assert gone.json()["error"] == "invalid_grant"


def test_only_an_admin_gets_the_admin_scope(server):
    client = register(server)
    verifier, challenge = pkce()
    got = code_from(authorize(server, client["client_id"], challenge, scope="mcp:tools mcp:admin", username="guest"))
    answer = token(server, {"grant_type": "authorization_code", "code": got["code"], "redirect_uri": REDIRECT,
                            "code_verifier": verifier, "client_id": client["client_id"],
                            "client_secret": client["client_secret"]}).json()
    assert answer["scope"] == "mcp:tools"  # narrowed, and the answer says so (RFC 6749 §3.3)
    refused = call(server, answer["access_token"], "reset_counter")
    assert refused.status_code == 403 and "insufficient_scope" in refused.headers["WWW-Authenticate"]
    assert "mcp:admin" in flow(server, client, scope="mcp:tools mcp:admin")["scope"].split()  # demo is an admin


def test_a_tool_scope_beyond_the_grant_is_a_403_until_reauthorized(server):
    client = register(server)
    narrow = flow(server, client, scope="mcp:tools")
    refused = call(server, narrow["access_token"], "reset_counter")
    assert refused.status_code == 403
    assert 'scope="mcp:tools mcp:admin"' in refused.headers["WWW-Authenticate"]
    wide = flow(server, client, scope="mcp:tools mcp:admin")
    assert final_message(call(server, wide["access_token"], "reset_counter"))["result"]["content"][0]["text"] == \
        "reset by demo"


# --- the authorize endpoint's errors -------------------------------------------------------------------
def test_authorize_errors_are_shown_to_the_user_and_never_redirected(server):
    """The user has not seen the client at /authorize, so no error goes to its redirect URI: an
    anonymously registered client would otherwise turn this origin into an open redirector."""
    _, challenge = pkce()
    good = {"response_type": "code", "client_id": "demo-client", "redirect_uri": REDIRECT, "state": "s1",
            "code_challenge": challenge}

    def get(**changes: Any) -> requests.Response:
        params = {k: v for k, v in {**good, **changes}.items() if v is not None}
        return requests.get(server.base + "/authorize", params=params, allow_redirects=False, timeout=TIMEOUT)

    for changes, error in [({"client_id": "nobody"}, "invalid_request"),
                           ({"redirect_uri": "http://evil.test/cb"}, "invalid_request"),
                           ({"code_challenge": None}, "invalid_request"),
                           ({"code_challenge_method": "plain"}, "invalid_request"),
                           ({"response_type": "token"}, "unsupported_response_type"),
                           ({"scope": "root"}, "invalid_scope")]:
        shown = get(**changes)
        assert shown.status_code == 400 and "Location" not in shown.headers, changes
        assert shown.json()["error"] == error and shown.json()["error_description"], changes
    phisher = register(server, redirect_uris=["http://127.0.0.1:9/phish"], token_endpoint_auth_method="none")
    bounced = get(client_id=phisher["client_id"], redirect_uri="http://127.0.0.1:9/phish", scope="no-such-scope")
    assert bounced.status_code == 400 and "Location" not in bounced.headers
    assert "no-such-scope" in bounced.json()["error_description"]
    assert code_from(authorize(server, "demo-client", challenge))["code"]  # a good request still signs in


def test_the_example_bounds_and_expires_what_anonymous_callers_leave_behind(serve_wsgi):
    from minimcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from minimcp.server.mcpserver import MCPServer

    example = load_example("oauth_server")
    now = [1_000_000.0]
    holder: dict[str, Any] = {}
    base = serve_wsgi(lambda environ, start: holder["app"](environ, start))
    provider = example.InMemoryProvider(base, base + "/mcp", {"demo": "demo"}, max_unused_clients=2, max_waiting=2,
                                        clock=lambda: now[0])
    mcp = MCPServer("bounded", auth_server_provider=provider, auth=AuthSettings(
        issuer_url=base, resource_server_url=base + "/mcp", validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(enabled=True)))
    mcp.custom_route("/login", ["GET", "POST"])(provider.login_route)
    holder["app"] = mcp.wsgi_app()
    provider.provision_client(example.OAuthClientInformationFull(
        client_id="provisioned", token_endpoint_auth_method="none", redirect_uris=[REDIRECT]))
    bounded = SimpleNamespace(base=base)  # what register() and authorize() read of a running server
    _, challenge = pkce()

    def start(client_id: str) -> requests.Response:
        return requests.get(base + "/authorize", params={
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge},
            allow_redirects=False, timeout=TIMEOUT)

    def login_page(started: requests.Response) -> int:
        return requests.get(started.headers["Location"], timeout=TIMEOUT).status_code

    used = register(bounded)["client_id"]
    assert code_from(authorize(bounded, used, challenge))["code"]  # demo signed in through it: it stays
    pushed_out, _, kept = (register(bounded)["client_id"] for _ in range(3))
    assert start(pushed_out).status_code == 400  # a third unused registration pushed out the oldest
    links = [start(kept) for _ in range(3)]
    assert [login_page(link) for link in links] == [400, 200, 200]  # at most two sign-ins wait
    now[0] += example.LOGIN_LIFETIME
    assert login_page(links[2]) == 400  # a sign-in link expires
    now[0] += example.UNUSED_CLIENT_LIFETIME
    assert start(kept).status_code == 400 and "not found" in start(kept).json()["error_description"]
    assert start(used).status_code == 302
    assert start("provisioned").status_code == 302  # the operator's own client is never pushed out
    holder["app"].close()


# --- a client no one here wrote ------------------------------------------------------------------------
def run_official_oauth_client(base: str, mode: str) -> dict[str, Any]:
    import anyio
    import httpx2
    from mcp.client import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
    from pydantic import AnyUrl

    class Memory:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    seen: dict[str, Any] = {}

    async def main() -> dict[str, Any]:
        async with httpx2.AsyncClient(timeout=30) as http:
            async def redirect_handler(url: str) -> None:
                # the user's browser: follow to the login page, sign in, read where it sends us
                first = await http.get(url, follow_redirects=False, auth=None)
                request_id = parse_qs(urlsplit(first.headers["location"]).query)["request"][0]
                login = await http.post(base + "/login", data={"request": request_id, "username": "demo",
                                                                "password": "demo"}, auth=None)
                seen["callback"] = parse_qs(urlsplit(login.headers["location"]).query)

            async def callback_handler() -> AuthorizationCodeResult:
                query = seen["callback"]
                return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0],
                                               iss=query.get("iss", [None])[0])

            http.auth = OAuthClientProvider(
                server_url=base + "/mcp",
                client_metadata=OAuthClientMetadata(client_name="official-sdk", redirect_uris=[AnyUrl(REDIRECT)]),
                storage=Memory(), redirect_handler=redirect_handler, callback_handler=callback_handler)
            async with Client(streamable_http_client(base + "/mcp", http_client=http), mode=mode) as client:
                who = await client.call_tool("whoami", {})
                count = await client.call_tool("increment", {})
                return {"who": who.structured_content, "count": count.content[0].text,
                        "version": client.protocol_version}

    return anyio.run(main)


@pytest.mark.parametrize("mode, version", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_the_official_sdk_client_completes_the_flow_and_calls_tools(mode, version):
    running = Running(load_example("oauth_server"))
    try:
        outcome = run_official_oauth_client(running.base, mode)
    finally:
        running.stop()
    assert outcome["version"] == version
    assert outcome["who"]["user"] == "demo" and "mcp:tools" in outcome["who"]["scopes"]
    assert outcome["count"] == "1"


def test_iss_is_advertised_only_by_a_provider_that_adds_it_and_an_immediate_answer_gets_it(serve_wsgi):
    """A provider that approves at once redirects straight to the client: the endpoint adds ``iss``.
    Its metadata does not promise ``iss`` (a client would then refuse any response without it)."""
    from minimcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from minimcp.server.mcpserver import MCPServer

    example = load_example("oauth_server")

    class AutoApprove(example.InMemoryProvider):
        authorization_response_iss_parameter_supported = False

        def authorize(self, client: Any, params: Any) -> str:
            granted = urlsplit(self.approve(client.client_id, params, "robot"))
            query = "&".join(part for part in granted.query.split("&") if not part.startswith("iss="))
            return granted._replace(query=query).geturl()

    holder: dict[str, Any] = {}
    base = serve_wsgi(lambda environ, start: holder["app"](environ, start))
    provider = AutoApprove(base, base + "/mcp", {})
    provider.register_client(example.OAuthClientInformationFull(
        client_id="auto", token_endpoint_auth_method="none", redirect_uris=[REDIRECT], scope="mcp:tools"))
    mcp = MCPServer("auto", auth_server_provider=provider, auth=AuthSettings(
        issuer_url=base, resource_server_url=base + "/mcp", validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(enabled=True)))
    holder["app"] = mcp.wsgi_app()
    document = requests.get(base + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).json()
    assert "authorization_response_iss_parameter_supported" not in document
    _, challenge = pkce()
    answer = requests.get(base + "/authorize", params={
        "response_type": "code", "client_id": "auto", "redirect_uri": REDIRECT, "state": "s",
        "code_challenge": challenge}, allow_redirects=False, timeout=TIMEOUT)
    got = code_from(answer)
    assert got["iss"] == base and got["state"] == "s" and got["code"]
    holder["app"].close()
