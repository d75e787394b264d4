"""``OAuthClientProvider``: OAuth 2.1 for an MCP client, as a ``requests`` auth object::

    provider = OAuthClientProvider(url, client_metadata, storage, redirect_handler, callback_handler)
    with Client(url, auth=provider) as client:
        client.list_tools()

Theory of operation. ``requests`` calls the provider on every prepared request (it adds the
``Authorization`` header, refreshing an expired token first) and then, through a ``response`` hook
the provider registers, hands it the answer. A 401, or a 403 whose challenge says
``insufficient_scope``, makes the provider authorize (discover, register, obtain a token) and send
the same request once more; the answer to that retry is final. A DPoP ``use_dpop_nonce`` 401 earns
one retry carrying the server's nonce. So one MCP request makes at most three HTTP requests to the
MCP server, and the authorizations that end in another refusal are counted: after
``max_authorizations`` in a row the provider stops asking and raises.

One lock guards the provider's state and is held for a whole authorization, so two threads that
hit a 401 together run the flow once: the second finds the first's token.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
import requests.auth

from minimcp.client.auth.challenge import challenge_param, parse_www_authenticate
from minimcp.client.auth.discovery import (
    discover_authorization_server,
    discover_protected_resource,
    issuers_match,
    origin,
    select_scope,
    union_scopes,
)
from minimcp.client.auth.dpop import DPOP_ALGORITHM, DPoPKey
from minimcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError, ServerRefusal
from minimcp.client.auth.jose import jwt_available
from minimcp.client.auth.pkce import PKCEParameters, new_state
from minimcp.client.auth.registration import (
    client_info_from_metadata_url,
    is_valid_client_metadata_url,
    register_client,
    should_use_client_metadata_url,
)
from minimcp.client.auth.storage import TokenStorage
from minimcp.client.auth.token_endpoint import auth_method, authenticate_client, request_token
from minimcp.client.auth.wire import authorization_server_session
from minimcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from minimcp.shared.auth_utils import (
    calculate_token_expiry,
    check_resource_allowed,
    require_sync_methods,
    resource_url_from_server_url,
)

logger = logging.getLogger("minimcp.client.auth")

#: A token this close to its expiry is refreshed before use rather than sent to fail.
EXPIRY_MARGIN_SECONDS = 30.0
#: How much of a refusal's body is kept for the person to read, should signing in fail: its message, not a page.
REFUSAL_BODY_BYTES = 4096


def _refusal(response: requests.Response) -> ServerRefusal:
    """What the server said in refusing: the start of the body, read before the response is closed."""
    try:
        start = next(response.iter_content(REFUSAL_BODY_BYTES), b"")
    except requests.RequestException:
        start = b""
    return ServerRefusal(response.status_code, response.headers.get("WWW-Authenticate"),
                         response.headers.get("Content-Type", ""),
                         start.decode(response.encoding or "utf-8", errors="replace"))


def _same_origin(a: str, b: str) -> bool:
    return origin(a).lower() == origin(b).lower()


def _header(headers: Mapping[str, str | bytes], name: str) -> str:
    """A request header's value as text, ``""`` when absent: requests sends a value its caller gave as
    bytes as it is, so a plain requests user's header reaches the provider as bytes."""
    value = headers.get(name, "")
    return value.decode("latin-1") if isinstance(value, bytes) else value


@dataclass
class OAuthContext:
    """Everything one provider knows: its configuration, what it discovered, what it holds."""

    server_url: str
    client_metadata: OAuthClientMetadata
    storage: TokenStorage
    redirect_handler: Callable[[str], None] | None
    callback_handler: Callable[[], AuthorizationCodeResult] | None
    client_metadata_url: str | None = None

    protected_resource_metadata: ProtectedResourceMetadata | None = None
    oauth_metadata: OAuthMetadata | None = None
    auth_server_url: str | None = None
    protocol_version: str | None = None

    client_info: OAuthClientInformationFull | None = None
    current_tokens: OAuthToken | None = None
    token_expiry_time: float | None = None

    def update_token_expiry(self, token: OAuthToken) -> None:
        self.token_expiry_time = calculate_token_expiry(token.expires_in)

    def is_token_valid(self) -> bool:
        return bool(
            self.current_tokens
            and (self.token_expiry_time is None or time.time() < self.token_expiry_time - EXPIRY_MARGIN_SECONDS)
        )

    def can_refresh_token(self) -> bool:
        return bool(self.current_tokens and self.current_tokens.refresh_token and self.client_info)

    def clear_tokens(self) -> None:
        self.current_tokens = None
        self.token_expiry_time = None

    def get_resource_url(self) -> str:
        """RFC 8707 ``resource``: the protected resource's own identifier, exactly as it published it,
        when it covers this server; else the server URL in canonical form."""
        resource = resource_url_from_server_url(self.server_url)
        published = self.protected_resource_metadata.resource if self.protected_resource_metadata else None
        if published and check_resource_allowed(requested_resource=resource, configured_resource=published):
            return published
        return resource

    def should_include_resource_param(self, protocol_version: str | None = None) -> bool:
        """Resource indicators joined MCP in 2025-06-18; a server with resource metadata gets them always."""
        if self.protected_resource_metadata is not None:
            return True
        version = protocol_version or self.protocol_version
        return bool(version and version >= "2025-06-18")

    def expected_issuer(self) -> str:
        """The authorization server's issuer: the one resource metadata named, else (2025-03-26) the
        MCP server's origin."""
        return self.auth_server_url or origin(self.server_url)


def validate_authorization_response(
    result: AuthorizationCodeResult | None, state: str, metadata: OAuthMetadata | None
) -> str:
    """The code from a redirect, after checking ``state`` and the RFC 9207 ``iss``.

    ``iss`` is compared as a plain string, with no URL normalization: a trailing ``/`` is a
    different issuer. A missing ``iss`` is refused only when the server promised to send one.
    """
    if not isinstance(result, AuthorizationCodeResult):
        raise OAuthFlowError("callback_handler must return an AuthorizationCodeResult")
    if result.state is None or not secrets.compare_digest(result.state, state):
        raise OAuthFlowError("The redirect's state does not match this login's; it is forged or stale: log in again")
    expected = metadata.issuer if metadata is not None else None
    if result.iss is not None and result.iss != expected:
        raise OAuthFlowError(
            f"The redirect came from issuer {result.iss[:200]!r}, not {expected!r}: refusing the code (RFC 9207)"
        )
    if result.iss is None and metadata is not None and metadata.authorization_response_iss_parameter_supported:
        raise OAuthFlowError(f"{expected} promised an iss parameter in its redirect and sent none (RFC 9207)")
    if not result.code:
        raise OAuthFlowError("The redirect carried no authorization code")
    return result.code


class OAuthClientProvider(requests.auth.AuthBase):
    """OAuth for one MCP server: discovery, registration, authorization code with PKCE, refresh.

    Give it to ``Client(url, auth=provider)``, ``streamable_http_client(url, auth=provider)``, or any
    ``requests`` call: ``requests.get(url, auth=provider)``. Tokens are only ever sent to the origin
    of ``server_url``.

    ``redirect_handler(url)`` sends the user to the authorization page; ``callback_handler()``
    blocks until the browser comes back and returns the redirect's parameters.
    :func:`minimcp.client.auth.browser_login` provides both for a script on a desktop.
    """

    #: Authorizations in a row that may end in another 401/403 before the provider gives up.
    max_authorizations = 3

    def __init__(
        self,
        server_url: str,
        client_metadata: OAuthClientMetadata,
        storage: TokenStorage,
        redirect_handler: Callable[[str], None] | None = None,
        callback_handler: Callable[[], AuthorizationCodeResult] | None = None,
        client_metadata_url: str | None = None,
        validate_resource_url: Callable[[str, str | None], None] | None = None,
        *,
        dpop: bool | None = None,
        timeout: float = 30.0,
        lock_timeout: float = 600.0,
    ) -> None:
        """``dpop=None`` binds tokens with DPoP when the authorization server offers it and the
        ``auth`` extra is installed; ``True`` always asks for DPoP, ``False`` never. ``timeout``
        bounds each request to an authorization server; ``lock_timeout`` is how long a request
        waits for another thread's authorization (a person logging in) before it gives up."""
        require_sync_methods(storage, "the token storage's", TokenStorage)
        for role, handler in (("redirect_handler", redirect_handler), ("callback_handler", callback_handler),
                              ("validate_resource_url", validate_resource_url)):
            require_sync_methods(handler, role)
        if client_metadata_url is not None and not is_valid_client_metadata_url(client_metadata_url):
            raise ValueError(f"client_metadata_url must be an https URL with a path, got {client_metadata_url!r}")
        self.context = OAuthContext(
            server_url=server_url,
            client_metadata=client_metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=client_metadata_url,
        )
        # What the caller asked to register for; client_metadata.scope itself follows each request.
        self._configured_scope = client_metadata.scope
        self.dpop = dpop
        self.timeout = timeout
        self.lock_timeout = lock_timeout
        self._validate_resource_url = validate_resource_url
        self._http = authorization_server_session()
        # Guards self.context, _dpop_key, _initialized and _refusals; held across a whole
        # authorization so that concurrent 401s run one flow. Reentrant: a response hook that
        # authorizes re-signs the retry under the same hold.
        self._lock = threading.RLock()
        self._initialized = False
        self._dpop_key: DPoPKey | None = None
        self._refusals = 0

    # --- requests.auth.AuthBase ------------------------------------------------------------

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if request.url is None or not _same_origin(request.url, self.context.server_url):
            return request  # never show a token to another server
        with self._locked():
            self._load()
            version = _header(request.headers, "MCP-Protocol-Version")
            if version:
                self.context.protocol_version = version
            if not self.context.is_token_valid() and self.context.can_refresh_token():
                self._refresh()
            self._sign(request)
        request.register_hook("response", self._on_response)
        return request

    def close(self) -> None:
        """Release the connections held to authorization servers."""
        self._http.close()

    # --- the response hook -----------------------------------------------------------------

    def _on_response(self, response: requests.Response, **send_options: Any) -> requests.Response:
        authorized = nonce_sent = False
        while True:
            if self._dpop_key is not None:
                self._dpop_key.remember_nonce(response.url, response.headers.get("DPoP-Nonce"))
            action = self._needed(response)
            if action == "nonce" and not nonce_sent:
                nonce_sent = True
            elif action == "authorize" and not authorized:
                authorized = True
            else:
                break
            refusal = _refusal(response) if action == "authorize" else None
            response.close()
            with self._locked():
                if action == "authorize" and not self._token_changed_since(response.request):
                    try:
                        self._authorize(response.status_code, response.headers.get("WWW-Authenticate"))
                    except OAuthFlowError as failure:
                        failure.refusal = refusal
                        raise
                retry = response.request.copy()
                self._sign(retry)
            answer = response.connection.send(retry, **send_options)
            answer.history.append(response)
            answer.request = retry
            response = answer
        if response.ok:
            with self._locked():
                self._refusals = 0
        return response

    def _token_changed_since(self, request: requests.PreparedRequest) -> bool:
        """Whether another thread obtained a new token after this request was signed: then a retry
        with that token, not another login, is the answer to its 401."""
        tokens = self.context.current_tokens
        sent = _header(request.headers, "Authorization")
        return tokens is not None and sent.partition(" ")[2] != tokens.access_token

    def _needed(self, response: requests.Response) -> str | None:
        """What a response asks of us: ``"authorize"``, ``"nonce"`` (a DPoP retry) or nothing.

        A refused DELETE (the end of a session) asks nothing: closing is not worth a login.
        """
        if response.status_code not in (401, 403) or response.request.method == "DELETE":
            return None
        header = response.headers.get("WWW-Authenticate")
        if response.status_code == 403:
            return "authorize" if challenge_param(header, "error") == "insufficient_scope" else None
        sent_dpop = _header(response.request.headers, "Authorization").startswith("DPoP ")
        for challenge in parse_www_authenticate(header):
            if challenge.scheme == "dpop" and challenge.params.get("error") == "use_dpop_nonce" and sent_dpop:
                return "nonce" if response.headers.get("DPoP-Nonce") else None
        return "authorize"

    # --- state -----------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=self.lock_timeout):
            raise OAuthFlowError(
                f"Another thread's authorization with {self.context.server_url} did not finish in {self.lock_timeout:g} s"
            )
        try:
            yield
        finally:
            self._lock.release()

    def _load(self) -> None:
        if self._initialized:
            return
        self.context.current_tokens = self.context.storage.get_tokens()
        self.context.client_info = self._initial_client_info()
        self._initialized = True

    def _initial_client_info(self) -> OAuthClientInformationFull | None:
        return self.context.storage.get_client_info()

    def _sign(self, request: requests.PreparedRequest) -> None:
        tokens = self.context.current_tokens
        if tokens is None:
            return
        if tokens.token_type == "DPoP" and self._dpop_key is not None:
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = self._dpop_key.proof(request.method or "GET", request.url or "", tokens.access_token)
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
            request.headers.pop("DPoP", None)

    def _store_tokens(self, tokens: OAuthToken, requested_scope: str | None) -> None:
        # RFC 6749 §5.1: no scope in the answer means the requested scope was granted; keeping it
        # makes the stored token say what it can do, which a later step-up needs.
        if tokens.scope is None:
            tokens.scope = requested_scope
        self.context.current_tokens = tokens
        self.context.update_token_expiry(tokens)
        self.context.storage.set_tokens(tokens)

    # --- authorization ---------------------------------------------------------------------

    def _authorize(self, status: int, www_authenticate: str | None) -> None:
        """Obtain a token that should satisfy this 401/403; raises when that is not possible."""
        if self._refusals >= self.max_authorizations:
            raise OAuthFlowError(
                f"{self.context.server_url} refused the request (HTTP {status}) after {self._refusals} "
                "authorizations in a row; giving up rather than asking again"
            )
        self._refusals += 1
        step_up = status == 403
        granted = self.context.current_tokens.scope if self.context.current_tokens else None
        if not step_up or self.context.oauth_metadata is None:
            self._discover(challenge_param(www_authenticate, "resource_metadata"))
        if not step_up and self.context.can_refresh_token() and self._refresh():
            return
        scope = select_scope(
            challenge_param(www_authenticate, "scope"),
            self.context.protected_resource_metadata,
            self.context.oauth_metadata,
            self.context.client_metadata.grant_types,
        )
        if step_up:
            scope = union_scopes(union_scopes(self.context.client_metadata.scope, granted), scope)
        self.context.client_metadata.scope = scope
        self._store_tokens(self._grant(scope), scope)

    def _discover(self, resource_metadata_url: str | None) -> None:
        context = self.context
        resource = discover_protected_resource(self._http, context.server_url, resource_metadata_url, self.timeout)
        if resource is not None:
            self._check_resource(resource)
            context.auth_server_url = self._select_authorization_server(resource.authorization_servers)
        else:
            context.auth_server_url = None
        context.protected_resource_metadata = resource
        expected = context.expected_issuer()
        info = context.client_info
        if (
            info is not None
            and info.issuer is not None
            and info.client_id != context.client_metadata_url
            and not issuers_match(info.issuer, expected)
        ):
            # SEP-2352: credentials belong to the server that issued them; never show them to another.
            logger.info("The authorization server changed from %s to %s: registering again", info.issuer, expected)
            context.client_info = None
            context.clear_tokens()
        context.oauth_metadata = None
        context.oauth_metadata = discover_authorization_server(
            self._http, context.auth_server_url, context.server_url, self.timeout
        )
        self._choose_dpop()

    def _check_resource(self, metadata: ProtectedResourceMetadata) -> None:
        if self._validate_resource_url is not None:
            self._validate_resource_url(self.context.server_url, metadata.resource)
            return
        expected = resource_url_from_server_url(self.context.server_url)
        if not check_resource_allowed(requested_resource=expected, configured_resource=metadata.resource):
            raise OAuthFlowError(
                f"The protected resource metadata is for {metadata.resource!r}, not for {expected!r}; "
                "refusing to authorize (RFC 9728 §3.3)"
            )

    def _select_authorization_server(self, advertised: list[str]) -> str:
        """Which of the resource's authorization servers to use: the first."""
        return advertised[0]

    def _choose_dpop(self) -> None:
        if self._dpop_key is not None or self.dpop is False:
            return
        metadata, resource = self.context.oauth_metadata, self.context.protected_resource_metadata
        offered = metadata is not None and DPOP_ALGORITHM in (metadata.dpop_signing_alg_values_supported or [])
        required = resource is not None and bool(resource.dpop_bound_access_tokens_required)
        if not (self.dpop or offered or required):
            return
        if self.dpop is None and not jwt_available():
            logger.info("The authorization server offers DPoP; install 'minimcp-sync[auth]' to bind tokens to this client")
            return
        self._dpop_key = DPoPKey()

    def _grant(self, scope: str | None) -> OAuthToken:
        """The grant this provider makes; here the authorization code grant with PKCE."""
        self._ensure_client()
        return self._authorization_code_grant(scope)

    def _ensure_client(self) -> None:
        context = self.context
        if context.client_info is not None:
            return
        metadata = context.oauth_metadata
        if should_use_client_metadata_url(metadata, context.client_metadata_url):
            assert context.client_metadata_url is not None
            info = client_info_from_metadata_url(context.client_metadata, context.client_metadata_url)
        elif metadata is not None and metadata.registration_endpoint is None:
            raise OAuthRegistrationError(
                f"The authorization server {metadata.issuer} offers no dynamic client registration: register a "
                "client with it and put the record in storage (TokenStorage.set_client_info), or pass client_metadata_url"
            )
        else:
            endpoint = metadata.registration_endpoint if metadata is not None else None
            # Registered for the configured scope, or (none configured) for whatever the server grants
            # by default, never for just the scope of this first request: a later step-up asks for more.
            registration = context.client_metadata.model_copy(update={"scope": self._configured_scope})
            info = register_client(
                self._http, endpoint or f"{origin(context.server_url)}/register", registration, self.timeout
            )
        info.issuer = context.expected_issuer() if metadata is not None else None
        context.client_info = info
        context.storage.set_client_info(info)

    def _authorization_code_grant(self, scope: str | None) -> OAuthToken:
        context = self.context
        if not context.client_metadata.redirect_uris:
            raise OAuthFlowError("The authorization code grant needs client_metadata.redirect_uris")
        if context.redirect_handler is None or context.callback_handler is None:
            raise OAuthFlowError(
                "The authorization code grant needs redirect_handler and callback_handler (browser_login() makes both)"
            )
        assert context.client_info is not None
        metadata = context.oauth_metadata
        endpoint = (metadata.authorization_endpoint if metadata else None) or f"{origin(context.server_url)}/authorize"
        pkce, state = PKCEParameters.generate(), new_state()
        redirect_uri = str(context.client_metadata.redirect_uris[0])
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        if context.should_include_resource_param():
            params["resource"] = context.get_resource_url()
        if scope:
            params["scope"] = scope
            if "offline_access" in scope.split():
                params["prompt"] = "consent"  # OpenID Connect Core §11: offline access needs consent
        separator = "&" if urlsplit(endpoint).query else "?"
        context.redirect_handler(endpoint + separator + urlencode(params))
        code = validate_authorization_response(context.callback_handler(), state, metadata)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": pkce.code_verifier,
        }
        return self._request_token(form)

    # --- the token endpoint ----------------------------------------------------------------

    def _token_endpoint(self) -> str:
        metadata = self.context.oauth_metadata
        return metadata.token_endpoint if metadata is not None else f"{origin(self.context.server_url)}/token"

    def _audience(self) -> str:
        """Whom a JWT this client signs or presents is for: the authorization server's issuer."""
        metadata = self.context.oauth_metadata
        return metadata.issuer if metadata is not None else self.context.expected_issuer()

    def _client_assertion(self, audience: str) -> str:
        """A signed ``private_key_jwt`` assertion; only providers holding a key can make one."""
        raise OAuthTokenError("This client is registered for private_key_jwt; use PrivateKeyJWTOAuthProvider")

    def _request_token(self, form: dict[str, str]) -> OAuthToken:
        context = self.context
        if context.should_include_resource_param():
            form.setdefault("resource", context.get_resource_url())
        info, metadata = context.client_info, context.oauth_metadata
        audience = self._audience()

        def authenticate(body: dict[str, str], headers: dict[str, str]) -> None:
            if info is not None:
                method = auth_method(info, metadata)
                authenticate_client(body, headers, info, method, self._client_assertion, audience)

        return request_token(
            self._http, self._token_endpoint(), form, self.timeout, authenticate=authenticate, dpop=self._dpop_key
        )

    def _refresh(self) -> bool:
        """Trade the refresh token for a new access token; ``False`` (tokens dropped) when refused."""
        tokens = self.context.current_tokens
        assert tokens is not None and tokens.refresh_token is not None
        try:
            fresh = self._request_token({"grant_type": "refresh_token", "refresh_token": tokens.refresh_token})
        except OAuthTokenError as exc:
            logger.info("Refreshing the access token failed, authorizing again: %s", exc)
            self.context.clear_tokens()
            return False
        # RFC 6749 §6: an answer may leave out the scope (unchanged) and the refresh token (not rotated).
        if fresh.refresh_token is None:
            fresh.refresh_token = tokens.refresh_token
        self._store_tokens(fresh, tokens.scope)
        return True


__all__ = ["OAuthClientProvider", "OAuthContext", "PKCEParameters", "TokenStorage", "validate_authorization_response"]
