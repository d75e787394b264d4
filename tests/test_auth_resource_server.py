"""A protected MCP endpoint over real HTTP: minimcp's server, real JWTs, a key server on a loopback port.

What a client sees without a token, with a bad one, with too few scopes (globally and per tool),
with a token in the URL or two Authorization headers; the protected-resource metadata; the token
inside tools (``ctx.access_token``, ``get_access_token()``) in both eras; and the principal the
token names binding legacy sessions and sealed ``requestState``.
"""

from __future__ import annotations

import http.client
import logging
import threading
from typing import Any, Callable
from urllib.parse import urlsplit

import pytest
import requests
from auth_support import KeyServer, mint, public_jwk, rsa_key, unsigned
from conftest import (
    LEGACY,
    TIMEOUT,
    final_message,
    initialize_params,
    modern_post,
    post,
    request_message,
)
from pydantic import BaseModel
from werkzeug.serving import make_server

from minimcp.server.auth.jwt_verifier import JWTVerifier
from minimcp.server.auth.middleware.auth_context import get_access_token
from minimcp.server.auth.provider import AccessToken
from minimcp.server.auth.settings import AuthSettings
from minimcp.server.mcpserver import Context, MCPServer

ISSUER = "https://idp.test"
RESOURCE = "http://mcp.test/mcp"
METADATA_URL = "http://mcp.test/.well-known/oauth-protected-resource/mcp"
CAPS = {"elicitation": {}}


class Ok(BaseModel):
    ok: bool


def protected_server(verifier: Any, **auth_options: Any) -> MCPServer:
    auth_options.setdefault("required_scopes", ["mcp:read"])
    auth_options.setdefault("validate_token_resource", False)
    mcp = MCPServer("Protected", auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, **auth_options),
                    token_verifier=verifier)

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        current = get_access_token()
        assert current is not None and current.token == ctx.access_token.token
        return f"{ctx.access_token.subject} via {current.client_id} with {' '.join(current.scopes)}"

    @mcp.tool(required_scopes=["mcp:write"])
    def delete_everything() -> str:
        return "deleted"

    @mcp.tool()
    def open_vault(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action}"

    @mcp.custom_route("/health", ["GET"])
    def health(request: Any) -> Any:
        from werkzeug.wrappers import Response
        return Response("ok")

    return mcp


@pytest.fixture
def keys() -> KeyServer:
    return KeyServer([public_jwk(rsa_key(), "k1")])


@pytest.fixture
def verifier(keys: KeyServer, serve_wsgi: Callable[[Any], str]) -> JWTVerifier:
    return JWTVerifier(jwks_uri=serve_wsgi(keys) + "/jwks.json", issuer=ISSUER, audience=RESOURCE, timeout=2)


@pytest.fixture
def url(verifier: JWTVerifier, serve_http: Callable[..., str]) -> str:
    return serve_http(protected_server(verifier))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def challenge(response: requests.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer`` header."""
    header = response.headers["WWW-Authenticate"]
    assert header.startswith("Bearer ")
    params = {}
    for part in header[len("Bearer "):].split('", '):
        key, _, value = part.partition('="')
        params[key.strip()] = value.rstrip('"')
    return params


def call(url: str, era: str, tool: str, arguments: dict[str, Any] | None = None, token: str | None = None,
         **extra: Any) -> requests.Response:
    headers = bearer(token) if token else {}
    params = {"name": tool, "arguments": arguments or {}, **extra}
    if era == "modern":
        return modern_post(url, "tools/call", params, capabilities=CAPS, headers=headers)[0]
    session = legacy_handshake_as(url, token)
    return post(url, request_message("tools/call", params), headers=headers, session_id=session,
                protocol_version=LEGACY)


def legacy_handshake_as(url: str, token: str | None) -> str:
    headers = bearer(token) if token else {}
    response = post(url, request_message("initialize", initialize_params(LEGACY, CAPS)), headers=headers)
    assert response.status_code == 200, response.text
    session = response.headers["Mcp-Session-Id"]
    ack = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers,
               session_id=session, protocol_version=LEGACY)
    assert ack.status_code == 202
    return session


def text_of(response: requests.Response) -> str:
    assert response.status_code == 200, (response.status_code, response.text)
    return final_message(response)["result"]["content"][0]["text"]


# --- discovery and the 401 ----------------------------------------------------------------------------
def test_protected_resource_metadata_at_the_path_suffixed_and_root_locations(url):
    base = url.rsplit("/mcp", 1)[0]
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = requests.get(base + path, timeout=TIMEOUT)
        assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
        document = response.json()
        assert document["resource"] == RESOURCE
        assert document["authorization_servers"] == [ISSUER]
        assert document["scopes_supported"] == ["mcp:read", "mcp:write"]
        assert document["bearer_methods_supported"] == ["header"]


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_no_token_is_a_401_that_says_where_to_get_one(url, era):
    response = (modern_post(url, "tools/list")[0] if era == "modern"
                else post(url, request_message("initialize", initialize_params())))
    assert response.status_code == 401
    # RFC 6750 §3.1: a request without credentials gets no error code in the challenge
    assert challenge(response) == {"resource_metadata": METADATA_URL, "scope": "mcp:read"}
    assert response.json() == {"error": "invalid_token", "error_description": "Authentication required"}


def test_get_and_delete_need_a_token_too(url):
    for method in ("GET", "DELETE"):
        response = requests.request(method, url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "x"},
                                    timeout=TIMEOUT)
        assert response.status_code == 401, method


def test_custom_routes_stay_public(url):
    assert requests.get(url.rsplit("/mcp", 1)[0] + "/health", timeout=TIMEOUT).text == "ok"


# --- a good token, in both eras ------------------------------------------------------------------------
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_tool_sees_the_callers_token(url, era):
    token = mint({"sub": "alice", "client_id": "desk", "scope": "mcp:read extra"})
    assert text_of(call(url, era, "whoami", token=token)) == "alice via desk with mcp:read extra"


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_token_without_the_endpoint_scope_is_a_403(url, era):
    response = call(url, era, "whoami", token=mint({"scope": "other"})) if era == "modern" else \
        post(url, request_message("initialize", initialize_params()), headers=bearer(mint({"scope": "other"})))
    assert response.status_code == 403
    assert challenge(response)["error"] == "insufficient_scope"
    assert challenge(response)["scope"] == "mcp:read"


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_tools_own_scopes_are_a_403_naming_them(url, era):
    response = call(url, era, "delete_everything", token=mint({"scope": "mcp:read"}))
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["error_description"] == "Required scope: mcp:write"
    assert params["scope"] == "mcp:read mcp:write"  # what to hold after step-up: the union
    assert params["resource_metadata"] == METADATA_URL
    assert text_of(call(url, era, "delete_everything", token=mint({"scope": "mcp:read mcp:write"}))) == "deleted"


def test_a_scoped_tool_on_an_unprotected_server_is_refused_to_everyone(serve_http):
    mcp = MCPServer("Open")

    @mcp.tool(required_scopes=["admin"])
    def shutdown() -> str:
        return "bye"

    response = call(serve_http(mcp), "modern", "shutdown")
    assert response.status_code == 403 and challenge(response)["scope"] == "admin"


# --- bad tokens -------------------------------------------------------------------------------------
@pytest.mark.parametrize("claims, options, description", [
    ({}, {"lifetime": -3600}, "Token expired"),
    ({"nbf": 4102444800}, {}, "Token not yet valid"),
    ({}, {"issuer": "https://evil.test"}, "Token issued by another issuer"),
    ({}, {"audience": "http://elsewhere.test/mcp"}, "Token not issued for this server (audience)"),
])
def test_bad_jwts_are_401s_that_say_why(url, claims, options, description, caplog):
    token = mint(claims, **options)
    with caplog.at_level(logging.DEBUG):
        response = call(url, "modern", "whoami", token=token)
    assert response.status_code == 401
    assert challenge(response)["error_description"] == description
    assert token not in caplog.text


@pytest.mark.parametrize("header, status, description", [
    ("Bearer not-a-jwt", 401, "Malformed token: not a signed JWT"),
    ("Bearer a.b.c", 401, "Malformed token: not a signed JWT"),
    ("Bearer bad token", 401, "Malformed bearer token"),
    ("Basic dXNlcjpwYXNz", 401, "Authorization must be a Bearer token"),
    ("Bearer", 401, "Authorization must be a Bearer token"),
    ("Bearer abc,Bearer def", 400, "Send exactly one Authorization header"),
])
def test_malformed_authorization_headers(url, header, status, description):
    response = modern_post(url, "tools/list", headers={"Authorization": header})[0]
    assert response.status_code == status
    assert response.json()["error_description"] == description
    if header.startswith("Bearer "):
        assert challenge(response)["error_description"] == description
    else:  # no bearer token at all (RFC 6750 §3.1): the challenge names no error
        assert "error" not in challenge(response) and "error_description" not in challenge(response)


@pytest.mark.parametrize("alg", ["\u2603", "RS256\u00e9", 'R"S\\256'])
def test_an_alg_the_header_cannot_carry_is_a_401_with_a_readable_reason(url, alg):
    token = unsigned({"sub": "alice", "aud": RESOURCE, "iss": ISSUER}, {"alg": alg, "kid": "k1"})
    response = modern_post(url, "tools/list", headers=bearer(token))[0]
    assert response.status_code == 401
    reason = challenge(response)["error_description"]
    assert reason.startswith("Token algorithm '") and reason.endswith("' is not accepted")
    assert reason.isascii() and '"' not in reason and "\\" not in reason
    assert response.json()["error"] == "invalid_token"
    assert text_of(call(url, "modern", "whoami", token=mint({"sub": "bob"}))).startswith("bob")  # still serving


def test_a_token_in_the_query_string_is_refused_even_beside_a_good_header(url):
    token = mint()
    for target in (f"{url}?access_token={token}", url + "?x=1&access_token=abc"):
        response = modern_post(target, "tools/list", headers=bearer(token))[0]
        assert response.status_code == 400
        assert challenge(response)["error"] == "invalid_request"


def test_two_authorization_headers_are_refused(url):
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT)
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",' \
           b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    connection.putrequest("POST", parts.path)
    for name, value in [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
                        ("Authorization", f"Bearer {mint()}"), ("Authorization", f"Bearer {mint()}"),
                        ("Content-Length", str(len(body)))]:
        connection.putheader(name, value)
    connection.endheaders(body)
    response = connection.getresponse()
    assert response.status == 400
    assert 'error="invalid_request"' in response.getheader("WWW-Authenticate")
    connection.close()


def test_a_one_megabyte_token_is_refused_and_the_server_keeps_serving(url):
    response = modern_post(url, "tools/list", headers={"Authorization": "Bearer " + "a" * (1024 * 1024)})[0]
    assert response.status_code == 431  # minimcp's HTTP server refuses the header line itself
    assert text_of(call(url, "modern", "whoami", token=mint())).startswith("alice")


def test_a_long_token_past_a_lenient_wsgi_server_is_a_401(verifier):
    """werkzeug's development server takes header lines up to 64 KiB: the edge's own limit answers."""
    app = protected_server(verifier).wsgi_app()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        target = f"http://127.0.0.1:{server.server_port}/mcp"
        response = modern_post(target, "tools/list", headers={"Authorization": "Bearer " + "a" * 20000})[0]
        assert response.status_code == 401
        assert challenge(response)["error_description"] == "Bearer token longer than 8192 characters"
    finally:
        server.shutdown()
        app.close()


@pytest.mark.parametrize("mode", ["down", "garbage", "slow"])
def test_a_broken_key_server_is_a_401_never_a_500(keys, url, mode, caplog):
    keys.mode = mode
    token = mint()
    try:
        with caplog.at_level(logging.DEBUG):
            response = call(url, "modern", "whoami", token=token)
    finally:
        keys.release.set()
    assert response.status_code == 401
    assert "signing keys are unavailable" in challenge(response)["error_description"]
    assert token not in caplog.text


def test_a_failing_custom_verifier_is_a_401_and_logs_no_token(serve_http, caplog):
    class Broken:
        def verify_token(self, token: str) -> AccessToken | None:
            raise RuntimeError(f"database unreachable while looking up {token}")

    url = serve_http(protected_server(Broken()))
    with caplog.at_level(logging.DEBUG):
        response = call(url, "modern", "whoami", token="opaque-token-value")
    assert response.status_code == 401
    assert challenge(response)["error_description"] == "The token could not be verified"
    assert "database unreachable" in caplog.text and "opaque-token-value" not in caplog.text


def test_validate_token_resource_refuses_a_token_for_another_resource(serve_http):
    class Table:
        def verify_token(self, token: str) -> AccessToken | None:
            resource = {"ours": RESOURCE, "theirs": "http://other.test/mcp"}.get(token)
            return None if resource is None else AccessToken(token=token, client_id="c", scopes=["mcp:read"],
                                                             resource=resource, subject="s")

    url = serve_http(protected_server(Table(), validate_token_resource=True))
    assert text_of(call(url, "modern", "whoami", token="ours")) == "s via c with mcp:read"
    response = call(url, "modern", "whoami", token="theirs")
    assert response.status_code == 401
    assert challenge(response)["error_description"] == "Token was not issued for this resource"


# --- one principal ---------------------------------------------------------------------------------
def test_a_legacy_session_belongs_to_the_tokens_holder(url):
    alice = mint({"sub": "alice"})
    session = legacy_handshake_as(url, alice)
    message = request_message("tools/call", {"name": "whoami", "arguments": {}})
    again = post(url, message, headers=bearer(mint({"sub": "alice"})), session_id=session, protocol_version=LEGACY)
    assert text_of(again).startswith("alice")  # a fresh token of the same user keeps the session
    for intruder in (mint({"sub": "bob"}), mint({"sub": "alice", "client_id": "other-app"})):
        stolen = post(url, message, headers=bearer(intruder), session_id=session, protocol_version=LEGACY)
        assert stolen.status_code == 404
        assert final_message(stolen)["error"]["message"] == "Session not found"


def test_a_request_state_minted_for_one_subject_is_refused_for_another(url):
    arguments = {"door": "front"}
    first = call(url, "modern", "open_vault", arguments, token=mint({"sub": "alice"}))
    state = final_message(first)["result"]["requestState"]
    answers = {"elicit:0": {"action": "accept", "content": {"ok": True}}}
    stolen = call(url, "modern", "open_vault", arguments, token=mint({"sub": "bob"}), requestState=state,
                  inputResponses=answers)
    assert final_message(stolen)["error"] == {"code": -32602, "message": "Invalid or expired requestState",
                                              "data": {"reason": "invalid_request_state"}}
    own = call(url, "modern", "open_vault", arguments, token=mint({"sub": "alice"}), requestState=state,
               inputResponses=answers)
    assert text_of(own) == "front: accept"


# --- configuration ---------------------------------------------------------------------------------
def test_half_configured_protection_is_refused_when_the_server_is_built(verifier):
    with pytest.raises(ValueError, match="needs a token_verifier"):
        MCPServer("x", auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE,
                                         validate_token_resource=False))
    with pytest.raises(ValueError, match="need auth=AuthSettings"):
        MCPServer("x", token_verifier=verifier)


def test_wsgi_app_can_protect_an_unprotected_server(verifier, serve_wsgi):
    mcp = MCPServer("Late")

    @mcp.tool()
    def ping_me() -> str:
        return "pong"

    app = mcp.wsgi_app(auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE,
                                         validate_token_resource=False), token_verifier=verifier)
    target = serve_wsgi(app) + "/mcp"
    assert call(target, "modern", "ping_me").status_code == 401
    assert text_of(call(target, "modern", "ping_me", token=mint())) == "pong"
    app.close()


def test_a_queued_task_body_sees_its_own_callers_token(verifier, serve_http):
    """Task bodies queued behind others run on whichever worker frees up; each must still see the
    token of the user who created it, never the previous body's."""
    mcp = protected_server(verifier)
    release = threading.Event()

    @mcp.tool(task=True)
    def slow_whoami(ctx: Context) -> str:
        release.wait(TIMEOUT)
        return f"{get_access_token().subject}/{ctx.access_token.subject}"

    mcp.tasks.max_running = 1
    url = serve_http(mcp)
    tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

    def create(subject: str) -> str:
        response, _ = modern_post(url, "tools/call", {"name": "slow_whoami", "arguments": {}}, capabilities=tasks,
                                  headers=bearer(mint({"sub": subject})))
        result = final_message(response)["result"]
        assert result["resultType"] == "task", result
        return result["taskId"]

    created = {subject: create(subject) for subject in ("alice", "bob")}  # bob's body waits behind alice's
    release.set()
    for subject, task_id in created.items():
        stop = threading.Event()
        for _ in range(500):
            response, _ = modern_post(url, "tasks/get", {"taskId": task_id}, capabilities=tasks,
                                      headers=bearer(mint({"sub": subject})))
            result = final_message(response)["result"]
            if result["status"] == "completed":
                break
            stop.wait(0.02)
        assert result["result"]["content"][0]["text"] == f"{subject}/{subject}"


def test_the_low_level_server_is_protected_the_same_way(verifier, serve_wsgi):
    from minimcp import types
    from minimcp.server import Server

    def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"hello {get_access_token().subject}")])

    server = Server("low", on_call_tool=call_tool)
    app = server.streamable_http_app(
        auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=False,
                          required_scopes=["mcp:read"]), token_verifier=verifier)
    base = serve_wsgi(app)
    try:
        refused = call(base + "/mcp", "modern", "anything")
        assert refused.status_code == 401 and challenge(refused)["resource_metadata"] == METADATA_URL
        assert requests.get(base + "/.well-known/oauth-protected-resource/mcp", timeout=TIMEOUT).json()[
            "authorization_servers"] == [ISSUER]
        assert text_of(call(base + "/mcp", "modern", "anything", token=mint({"sub": "carol"}))) == "hello carol"
        assert text_of(call(base + "/mcp", "legacy", "anything", token=mint({"sub": "carol"}))) == "hello carol"
    finally:
        app.close()
