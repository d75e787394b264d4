"""Talking to the token endpoint: client authentication, DPoP proofs and nonces, reading the answer.

Every grant (authorization code, refresh, client credentials, JWT bearer) ends in the same POST,
so this is the one place that decides how the client proves who it is (RFC 6749 §2.3,
RFC 7523 §2.2), retries once when the server demands a DPoP nonce (RFC 9449 §8), and turns the
answer into an :class:`OAuthToken` or an error that names the server's complaint and nothing else.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from urllib.parse import quote

import requests
from pydantic import ValidationError

from minimcp.client.auth.dpop import DPoPKey
from minimcp.client.auth.exceptions import OAuthFlowError, OAuthTokenError
from minimcp.client.auth.wire import MAX_BODY_BYTES, json_object, oauth_error_text, read_limited
from minimcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken

#: RFC 7523 §2.2: how a signed client assertion is labelled.
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

#: Makes a signed ``client_assertion`` for ``private_key_jwt`` whose audience is the given issuer.
AssertionMaker = Callable[[str], str]


def auth_method(client_info: OAuthClientInformationFull, metadata: OAuthMetadata | None) -> str:
    """The token endpoint authentication method to use for this client.

    The registration's own method wins. A record without one (a pre-registered client) uses
    ``client_secret_basic`` when it has a secret (RFC 7591 §2's default), unless the server only
    takes ``client_secret_post``; without a secret it is a public client.
    """
    if client_info.token_endpoint_auth_method:
        return client_info.token_endpoint_auth_method
    if not client_info.client_secret:
        return "none"
    supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
    if supported and "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


def authenticate_client(
    form: dict[str, str],
    headers: dict[str, str],
    client_info: OAuthClientInformationFull,
    method: str,
    make_assertion: AssertionMaker | None = None,
    audience: str = "",
) -> None:
    """Add the client's credentials to one token request, the way ``method`` says."""
    form.pop("client_secret", None)
    if method == "client_secret_basic":
        if not client_info.client_secret:
            raise OAuthTokenError("client_secret_basic needs a client_secret, and this client has none")
        # RFC 6749 §2.3.1: each part form-urlencoded before the pair is base64-encoded.
        pair = f"{quote(client_info.client_id, safe='')}:{quote(client_info.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    elif method == "client_secret_post":
        if not client_info.client_secret:
            raise OAuthTokenError("client_secret_post needs a client_secret, and this client has none")
        form["client_id"] = client_info.client_id
        form["client_secret"] = client_info.client_secret
    elif method == "private_key_jwt":
        if make_assertion is None:
            raise OAuthTokenError("private_key_jwt needs a signing key; use PrivateKeyJWTOAuthProvider")
        form["client_id"] = client_info.client_id
        form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
        form["client_assertion"] = make_assertion(audience)
    elif method == "none":
        form["client_id"] = client_info.client_id
    else:
        raise OAuthTokenError(f"The client is registered for token endpoint authentication {method!r}, which minimcp cannot do")


def request_token(
    http: requests.Session,
    token_url: str,
    form: dict[str, str],
    timeout: float,
    *,
    authenticate: Callable[[dict[str, str], dict[str, str]], None],
    dpop: DPoPKey | None = None,
) -> OAuthToken:
    """POST one grant and return the token; a ``use_dpop_nonce`` refusal earns one retry with the nonce.

    ``authenticate`` runs before every attempt, so a signed assertion is never sent twice.
    """
    def post() -> tuple[requests.Response, bytes]:
        body, headers = dict(form), {"Accept": "application/json"}
        authenticate(body, headers)
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", token_url)
        try:
            response = http.post(token_url, data=body, headers=headers, timeout=timeout, allow_redirects=False, stream=True)
            content = read_limited(response)
        except (requests.exceptions.RequestException, ConnectionError) as exc:
            raise OAuthFlowError(f"The token endpoint {token_url} could not be reached ({exc.__class__.__name__})") from None
        if dpop is not None:
            dpop.remember_nonce(token_url, response.headers.get("DPoP-Nonce"))
        return response, content

    response, content = post()
    if dpop is not None and response.headers.get("DPoP-Nonce") and (json_object(content) or {}).get("error") == "use_dpop_nonce":
        response, content = post()
    return _token_from(response.status_code, content, token_url, dpop is not None)


def _token_from(status: int, content: bytes, token_url: str, proof_sent: bool) -> OAuthToken:
    if status not in (200, 201):
        raise OAuthTokenError(f"The token endpoint {token_url} refused the request with HTTP {status}{oauth_error_text(content)}")
    document = json_object(content) if len(content) <= MAX_BODY_BYTES else None
    if document is None:
        raise OAuthTokenError(f"The token endpoint {token_url} answered something that is not a JSON object")
    if not isinstance(document.get("access_token"), str) or not document["access_token"]:
        raise OAuthTokenError(f"The token endpoint {token_url} answered without an access_token")
    try:
        token = OAuthToken.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise OAuthTokenError(f"The token endpoint {token_url} answered an invalid token ({where}: {first['msg']})") from None
    if token.token_type == "DPoP" and not proof_sent:
        raise OAuthTokenError(f"The token endpoint {token_url} issued a DPoP-bound token to a request without a proof")
    if token.token_type not in ("Bearer", "DPoP"):
        raise OAuthTokenError(f"The token endpoint {token_url} issued a {token.token_type!r} token, which minimcp cannot present")
    return token


__all__ = ["CLIENT_ASSERTION_TYPE", "auth_method", "authenticate_client", "request_token"]
