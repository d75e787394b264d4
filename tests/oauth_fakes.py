"""A small, real OAuth world for client tests: an authorization server and a protected MCP server.

Both are WSGI apps served on loopback ports by the tests (``serve_wsgi``), so the client under test
does real discovery, registration, redirects and token requests over HTTP. They check what a real
server checks (PKCE S256, the registered secret, refresh tokens, scopes) and record every request,
and each has switches that make it misbehave the ways the bad-input tests need.

Every secret the authorization server hands out starts with ``SECRET-``, so a test can assert that
none ever reaches a log line or an exception message.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import jwt
from werkzeug.wrappers import Request, Response

from minimcp import Client
from minimcp.client.auth import InMemoryTokenStorage, OAuthClientProvider
from minimcp.server import MCPServer
from minimcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

SECRET_PREFIX = "SECRET-"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
REDIRECT_URI = "http://127.0.0.1:9/callback"


def secret(kind: str) -> str:
    return f"{SECRET_PREFIX}{kind}-{secrets.token_hex(8)}"


def json_response(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(document), status=status, mimetype="application/json", headers=headers)


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638: SHA-256 over the required members, sorted, without whitespace."""
    members = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def check_dpop_proof(proof: str, method: str, url: str, access_token: str | None = None) -> dict[str, Any]:
    """The claims of a valid DPoP proof for this request, plus ``jkt``; ``AssertionError`` otherwise."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]).key, algorithms=["ES256"])
    assert claims["htm"] == method and claims["htu"] == url and claims["jti"]
    if access_token is not None:
        digest = hashlib.sha256(access_token.encode()).digest()
        assert claims["ath"] == base64.urlsafe_b64encode(digest).decode().rstrip("=")
    return {**claims, "jkt": jwk_thumbprint(header["jwk"])}


class FakeAuthorizationServer:
    """An OAuth 2.1 authorization server with dynamic registration, PKCE and refresh tokens.

    Switches: ``metadata_body`` (raw bytes to serve instead of the metadata), ``metadata_issuer``,
    ``grantable`` (the only scopes it will ever grant), ``offers_registration``. Like a real server
    it refuses a scope beyond the one a client registered for (a client registered without one
    may ask for any),
    ``redirect_state`` / ``redirect_iss`` (what the redirect carries), ``token_body`` (raw JSON to
    answer a token request with), ``registration_endpoint`` (where metadata says to register),
    ``expires_in``.
    """

    def __init__(self) -> None:
        self.base = ""
        # Guards every record below: the app runs on the HTTP server's threads, tests read from theirs.
        self.lock = threading.Lock()
        self.scopes_supported: list[str] | None = None
        self.grantable: set[str] | None = None
        self.metadata_body: bytes | None = None
        self.metadata_content_type = "application/json"
        self.metadata_issuer: str | None = None
        self.registration_endpoint: str | None = None
        self.offers_registration = True
        self.redirect_state: str | None = None
        self.redirect_iss: str | None = None
        self.iss_supported = True
        self.token_body: dict[str, Any] | None = None
        self.expires_in = 3600
        self.clients: dict[str, str] = {}
        #: client_id -> the scopes it registered for; a client registered without a scope may ask for any
        self.client_scopes: dict[str, set[str]] = {}
        #: client_id -> public key (PEM) for private_key_jwt; assertion issuer -> key for the JWT bearer grant
        self.client_keys: dict[str, Any] = {}
        self.assertion_keys: dict[str, Any] = {}
        self.dpop_algs: list[str] | None = None
        self.dpop_nonce: str | None = None
        self.metadata_status = 200
        self.client_id_metadata_documents = False
        self.token_headers: list[dict[str, str]] = []
        self.bound_keys: dict[str, str] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access_tokens: dict[str, set[str]] = {}
        self.refresh_tokens: dict[str, set[str]] = {}
        self.registrations: list[dict[str, Any]] = []
        self.authorizations: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []

    # -- what tests look at

    def revoke_access_tokens(self) -> None:
        with self.lock:
            self.access_tokens.clear()

    def scopes_of(self, access_token: str) -> set[str] | None:
        with self.lock:
            return self.access_tokens.get(access_token)

    # -- the app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        route = {
            "/.well-known/oauth-authorization-server": self.metadata,
            "/register": self.register,
            "/authorize": self.authorize,
            "/token": self.token,
        }.get(request.path)
        response = route(request) if route is not None else Response("not found", status=404)
        return response(environ, start_response)

    def metadata(self, request: Request) -> Response:
        if self.metadata_status != 200:
            return Response("no metadata here", status=self.metadata_status)
        if self.metadata_body is not None:
            return Response(self.metadata_body, content_type=self.metadata_content_type)
        document: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.base,
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "authorization_response_iss_parameter_supported": self.iss_supported,
        }
        if self.offers_registration:
            document["registration_endpoint"] = self.registration_endpoint or f"{self.base}/register"
        if self.scopes_supported is not None:
            document["scopes_supported"] = self.scopes_supported
        if self.dpop_algs is not None:
            document["dpop_signing_alg_values_supported"] = self.dpop_algs
        if self.client_id_metadata_documents:
            document["client_id_metadata_document_supported"] = True
        return json_response(document)

    def register(self, request: Request) -> Response:
        body = request.get_json(force=True, silent=True) or {}
        client_id, client_secret = f"client-{secrets.token_hex(4)}", secret("client")
        with self.lock:
            self.registrations.append(body)
            self.clients[client_id] = client_secret
            if body.get("scope"):
                self.client_scopes[client_id] = set(body["scope"].split())
        return json_response(
            {**body, "client_id": client_id, "client_secret": client_secret, "token_endpoint_auth_method": "client_secret_basic"},
            status=201,
        )

    def authorize(self, request: Request) -> Response:
        query = dict(request.args)
        with self.lock:
            self.authorizations.append(query)
            code = secret("code")
            self.codes[code] = query
            registered = self.client_scopes.get(query.get("client_id", ""))
        redirect = {"code": code, "state": self.redirect_state or query.get("state", "")}
        if registered is not None and not set(query.get("scope", "").split()) <= registered:
            redirect = {"error": "invalid_scope", "state": query.get("state", "")}
        iss = self.redirect_iss if self.redirect_iss is not None else self.base
        if iss:
            redirect["iss"] = iss
        return Response(status=302, headers={"Location": f"{query['redirect_uri']}?{urlencode(redirect)}"})

    def _client(self, request: Request) -> str | None:
        """The authenticated client: Basic credentials, a posted secret, a signed assertion
        (private_key_jwt), or a public client named by a metadata-document URL or a JWT bearer grant."""
        header = request.headers.get("Authorization", "")
        client_id = request.form.get("client_id", "")
        if request.form.get("client_assertion_type") and client_id in self.client_keys:
            claims = jwt.decode(request.form["client_assertion"], self.client_keys[client_id], algorithms=["ES256"],
                                audience=self.base)
            return client_id if claims["iss"] == claims["sub"] == client_id else None
        if not header and client_id.startswith("https://") and self.client_id_metadata_documents:
            return client_id
        if not header and request.form.get("grant_type") == JWT_BEARER and "client_secret" not in request.form:
            return client_id
        if header.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(header[6:]).decode().partition(":")
            client_id, client_secret = unquote(client_id), unquote(client_secret)
        else:
            client_id, client_secret = request.form.get("client_id", ""), request.form.get("client_secret", "")
        with self.lock:
            return client_id if self.clients.get(client_id) == client_secret else None

    def token(self, request: Request) -> Response:
        form = dict(request.form)
        with self.lock:
            self.token_requests.append(form)
            self.token_headers.append(dict(request.headers))
        client_id = self._client(request)
        if client_id is None:
            return json_response({"error": "invalid_client"}, status=401)
        bound_key = None
        if self.dpop_algs is not None and request.headers.get("DPoP"):
            proof = check_dpop_proof(request.headers["DPoP"], "POST", f"{self.base}/token")
            if proof.get("nonce") != self.dpop_nonce:
                return json_response({"error": "use_dpop_nonce"}, status=400, headers={"DPoP-Nonce": self.dpop_nonce or ""})
            bound_key = proof["jkt"]
        if self.token_body is not None:
            return json_response(self.token_body)
        if form.get("grant_type") == "authorization_code":
            with self.lock:
                grant = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
            if grant is None or grant.get("code_challenge") != challenge or grant.get("client_id") != client_id:
                return json_response({"error": "invalid_grant", "error_description": "code or verifier"}, status=400)
            scopes = set((grant.get("scope") or "").split())
            if self.grantable is not None:
                scopes &= self.grantable
        elif form.get("grant_type") == "refresh_token":
            with self.lock:
                scopes = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if scopes is None:
                return json_response({"error": "invalid_grant"}, status=400)
        elif form.get("grant_type") == "client_credentials":
            scopes = set((form.get("scope") or "").split())
        elif form.get("grant_type") == JWT_BEARER:
            assertion = form.get("assertion", "")
            key = self.assertion_keys.get(jwt.decode(assertion, options={"verify_signature": False}).get("iss"))
            try:
                jwt.decode(assertion, key, algorithms=["ES256"], audience=self.base)
            except (jwt.InvalidTokenError, TypeError, ValueError):
                return json_response({"error": "invalid_grant", "error_description": "assertion refused"}, status=400)
            scopes = set((form.get("scope") or "").split())
        else:
            return json_response({"error": "unsupported_grant_type"}, status=400)
        access, refresh = secret("access"), secret("refresh")
        with self.lock:
            self.access_tokens[access] = scopes
            self.refresh_tokens[refresh] = scopes
            if bound_key is not None:
                self.bound_keys[access] = bound_key
        return json_response(
            {"access_token": access, "token_type": "DPoP" if bound_key else "Bearer", "expires_in": self.expires_in,
             "refresh_token": refresh, "scope": " ".join(sorted(scopes))}
        )


class ProtectedMCP:
    """An MCP server behind a bearer check, publishing protected resource metadata (RFC 9728).

    ``required`` maps JSON-RPC methods to the scope they need (``"*"`` for everything else);
    ``resource`` overrides the published resource identifier.
    """

    def __init__(self, app: Any, auth_server: FakeAuthorizationServer) -> None:
        self.app = app
        self.auth_server = auth_server
        self.base = ""
        self.required: dict[str, str] = {}
        self.resource: str | None = None
        self.metadata_body: bytes | None = None
        self.publish_metadata = True
        self.dpop_nonce: str | None = None
        self.lock = threading.Lock()  # guards seen and proofs
        self.seen: list[tuple[str, int]] = []
        self.proofs: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if request.path == "/.well-known/oauth-protected-resource/mcp" and self.publish_metadata:
            if self.metadata_body is not None:
                return Response(self.metadata_body, content_type="text/html")(environ, start_response)
            document = {"resource": self.resource or self.url, "authorization_servers": [self.auth_server.base]}
            return json_response(document)(environ, start_response)
        if request.path != "/mcp":
            if not self.publish_metadata:  # the 2025-03-26 shape: the MCP server is its own authorization server
                return self.auth_server(environ, start_response)
            return Response("not found", status=404)(environ, start_response)
        body = request.get_data()
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        method = (json.loads(body).get("method", "") if body else request.method) or ""
        denial = self._deny(request.headers.get("Authorization", ""), method) or self._deny_proof(request)
        with self.lock:
            self.seen.append((method, denial.status_code if denial is not None else 200))
        if denial is not None:
            return denial(environ, start_response)
        return self.app(environ, start_response)

    def _deny_proof(self, request: Request) -> Response | None:
        """RFC 9449 §7: a DPoP-bound token needs a proof by its key, for this request, with our nonce."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        bound = self.auth_server.bound_keys.get(token)
        if bound is None and scheme != "DPoP":
            return None
        proof = check_dpop_proof(request.headers.get("DPoP", ""), request.method, self.url, token)
        assert scheme == "DPoP" and proof["jkt"] == bound
        with self.lock:
            self.proofs.append(proof)
        if self.dpop_nonce is not None and proof.get("nonce") != self.dpop_nonce:
            challenge = 'DPoP error="use_dpop_nonce", error_description="nonce required"'
            return json_response({"error": "use_dpop_nonce"}, status=401,
                                 headers={"WWW-Authenticate": challenge, "DPoP-Nonce": self.dpop_nonce})
        return None

    def _deny(self, authorization: str, method: str) -> Response | None:
        metadata = f"{self.base}/.well-known/oauth-protected-resource/mcp"
        needed = self.required.get(method, self.required.get("*"))
        scheme, _, token = authorization.partition(" ")
        scopes = self.auth_server.scopes_of(token) if scheme in ("Bearer", "DPoP") else None
        if scopes is None:
            challenge = 'Bearer error="invalid_token"'
            if self.publish_metadata:
                challenge += f', resource_metadata="{metadata}"'
            if needed:
                challenge += f', scope="{needed}"'
            return json_response({"error": "invalid_token"}, status=401, headers={"WWW-Authenticate": challenge})
        if needed and needed not in scopes:
            challenge = f'Bearer error="insufficient_scope", scope="{needed}", resource_metadata="{metadata}"'
            return json_response({"error": "insufficient_scope"}, status=403, headers={"WWW-Authenticate": challenge})
        return None


class ApprovingUser:
    """The person at the browser, who approves every request: the authorization page is fetched and
    its redirect read (not followed) for the code, ``state`` and ``iss``."""

    def __init__(self) -> None:
        self.visits: list[str] = []
        self._result: AuthorizationCodeResult | None = None

    def redirect(self, authorization_url: str) -> None:
        import requests

        self.visits.append(authorization_url)
        response = requests.get(authorization_url, allow_redirects=False, timeout=30)
        query = dict(part.split("=", 1) for part in urlsplit(response.headers["Location"]).query.split("&"))
        query = {name: unquote(value) for name, value in query.items()}
        self._result = AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"))

    def callback(self) -> AuthorizationCodeResult:
        assert self._result is not None
        result, self._result = self._result, None
        return result


def client_metadata(**overrides: Any) -> OAuthClientMetadata:
    return OAuthClientMetadata(client_name="minimcp-tests", redirect_uris=[REDIRECT_URI], **overrides)


def list_tool_names(url: str, auth: Any) -> list[str]:
    with Client(url, auth=auth, mode="legacy") as client:
        return [tool.name for tool in client.list_tools().tools]


@dataclass
class World:
    auth_server: FakeAuthorizationServer
    resource: ProtectedMCP
    user: ApprovingUser
    storage: InMemoryTokenStorage

    @property
    def url(self) -> str:
        return self.resource.url

    def provider(self, **options: Any) -> OAuthClientProvider:
        return OAuthClientProvider(
            self.url, client_metadata(), self.storage, self.user.redirect, self.user.callback, **options
        )


def guarded_world(serve_wsgi: Callable[[Any], str]) -> Iterator[World]:
    """A protected MCP server (tools ``echo`` and ``write_note``) and its authorization server, served;
    a fixture body: ``yield from guarded_world(serve_wsgi)``."""
    mcp = MCPServer("guarded")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def write_note(text: str) -> str:
        return f"noted: {text}"

    app = mcp.wsgi_app()
    auth_server = FakeAuthorizationServer()
    auth_server.base = serve_wsgi(auth_server)
    resource = ProtectedMCP(app, auth_server)
    resource.base = serve_wsgi(resource)
    yield World(auth_server, resource, ApprovingUser(), InMemoryTokenStorage())
    app.close()
