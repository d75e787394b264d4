"""The bearer-token check at the HTTP edge of a protected MCP endpoint (RFC 6750, RFC 9728 §5).

Every request to the endpoint, whatever its method or era, passes ``BearerAuthBackend.authenticate``
before the dispatcher sees it: the token comes from the one ``Authorization`` header (never the
query string, MCP forbids it), the verifier says what it grants, and the global scopes are checked.
A refusal is an ``AuthChallenge``, which the edge answers as 401/403/400 with a
``WWW-Authenticate: Bearer`` header naming the error, the protected-resource metadata URL and the
scopes to ask for: what a client needs to (re)authorize. A tool's own scopes are checked the same
way once the edge knows which tool a call names (``scope_challenge``).

No token ever reaches a log line: failures are logged by kind, and the verifier's own exceptions by
type and message only.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, Protocol
from urllib.parse import parse_qsl

from pydantic import AnyHttpUrl, ValidationError

from minimcp.server.auth.provider import AccessToken, InvalidTokenError, TokenVerifier

logger = logging.getLogger("minimcp.server.auth")

#: Longer than any token an identity provider issues, shorter than what a server should parse.
MAX_TOKEN_LENGTH = 8192
# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


class AuthChallenge(Exception):
    """A refused request: the HTTP status, the RFC 6750 error code, and the scopes to ask for.

    ``names_error=False`` is the challenge to a request that sent no bearer token at all: RFC 6750
    §3.1 says its header carries no error code or description (the client did nothing wrong, it
    did not know it had to authenticate), only where to get a token.
    """

    def __init__(self, status: int, error: str, description: str, scopes: list[str] | None = None, *,
                 names_error: bool = True) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.scopes = scopes
        self.names_error = names_error

    def www_authenticate(self, resource_metadata_url: str | None) -> str:
        parts: list[str] = []
        if self.names_error:
            parts += [f'error="{self.error}"', f'error_description="{_quotable(self.description)}"']
        if resource_metadata_url:
            parts.append(f'resource_metadata="{resource_metadata_url}"')
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        return " ".join(["Bearer", ", ".join(parts)]) if parts else "Bearer"

    def body(self) -> bytes:
        return json.dumps({"error": self.error, "error_description": self.description}).encode()


def _quotable(text: str) -> str:
    """``text`` in the characters RFC 6750 §3 allows in ``error_description`` (printable ASCII but
    ``"`` and ``\\``, each other one shown as ``?``): a verifier's reason may quote what the token
    said (a non-ASCII ``alg``), and must neither break the header nor be unencodable in it."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text)


def _same_resource(a: str | None, b: str) -> bool:
    """Compare as URLs (case of scheme and host, default ports), a trailing slash aside."""
    try:
        return str(AnyHttpUrl(a or "")).rstrip("/") == b
    except ValidationError:
        return False


def missing_scopes(token: AccessToken | None, needed: list[str]) -> list[str]:
    held = set(token.scopes) if token is not None else set()
    return [scope for scope in needed if scope not in held]


class BearerAuthBackend:
    """Authenticates a request from its WSGI environ, or refuses it with an ``AuthChallenge``.

    ``required_scopes`` must all be held; with ``resource_server_url`` set, a token must have been
    issued for that resource (``AccessToken.resource``, compared as a URL).
    """

    def __init__(self, token_verifier: TokenVerifier, *, required_scopes: list[str] | None = None,
                 resource_server_url: AnyHttpUrl | str | None = None) -> None:
        self.token_verifier = token_verifier
        self.required_scopes = list(required_scopes or [])
        self.resource_server_url = (None if resource_server_url is None
                                    else str(AnyHttpUrl(str(resource_server_url))).rstrip("/"))

    def authenticate(self, environ: dict[str, Any]) -> AccessToken:
        token = self._bearer(environ)
        try:
            access = self.token_verifier.verify_token(token)
        except InvalidTokenError as refused:
            logger.info("bearer token refused: %s", refused.description)
            raise self._invalid(refused.description) from None
        except Exception as exc:  # a verifier's failure is the client's 401, not the server's 500
            logger.error("token verifier failed (%s: %s)", type(exc).__name__, str(exc).replace(token, "[token]"))
            raise self._invalid("The token could not be verified") from None
        if access is None:
            raise self._invalid("Invalid or expired token")
        if access.expires_at is not None and access.expires_at < time.time():
            raise self._invalid("Token expired")
        if self.resource_server_url is not None and not _same_resource(access.resource, self.resource_server_url):
            logger.info("bearer token refused: issued for resource %r", access.resource)
            raise self._invalid("Token was not issued for this resource")
        missing = missing_scopes(access, self.required_scopes)
        if missing:
            raise AuthChallenge(403, "insufficient_scope", f"Required scope: {' '.join(missing)}",
                                self.required_scopes)
        return access

    def _invalid(self, description: str) -> AuthChallenge:
        return AuthChallenge(401, "invalid_token", description, self.required_scopes)

    def _unauthenticated(self, description: str) -> AuthChallenge:
        """No bearer token (none at all, or credentials of another scheme, RFC 6750 §3.1's example)."""
        return AuthChallenge(401, "invalid_token", description, self.required_scopes, names_error=False)

    def _bearer(self, environ: dict[str, Any]) -> str:
        query = environ.get("QUERY_STRING", "")
        if "access_token" in query and any(key == "access_token" for key, _ in parse_qsl(query)):
            raise AuthChallenge(400, "invalid_request",
                                "Send the access token in the Authorization header, never in the URL",
                                self.required_scopes)
        header = environ.get("HTTP_AUTHORIZATION")
        if not header:
            raise self._unauthenticated("Authentication required")
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise self._unauthenticated("Authorization must be a Bearer token")
        if "," in token:  # a WSGI server joins repeated headers with commas
            raise AuthChallenge(400, "invalid_request", "Send exactly one Authorization header",
                                self.required_scopes)
        if len(token) > MAX_TOKEN_LENGTH:
            raise self._invalid(f"Bearer token longer than {MAX_TOKEN_LENGTH} characters")
        if not _B64TOKEN.fullmatch(token):
            raise self._invalid("Malformed bearer token")
        return token


class Protection(Protocol):
    """A protected endpoint (``ProtectedResource``), as far as a tool's scopes go: the scopes every
    request already needs."""

    @property
    def required_scopes(self) -> list[str]: ...


def scope_challenge(protection: Protection | None, token: AccessToken | None,
                    needed: list[str]) -> AuthChallenge | None:
    """The 403 for a call whose token lacks some of ``needed``, naming every scope the client
    should hold after re-authorizing (the endpoint's own and the tool's). An unprotected endpoint
    has no token to hold them, so it refuses such a tool to every caller."""
    missing = missing_scopes(token, needed)
    if not missing:
        return None
    base = protection.required_scopes if protection is not None else []
    return AuthChallenge(403, "insufficient_scope", f"Required scope: {' '.join(missing)}",
                         list(dict.fromkeys([*base, *needed])))
